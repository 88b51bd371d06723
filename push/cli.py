"""CLI: `hitl vapid-keys new` — the portal's Web Push key pair, printed once as environment lines."""

import argparse
from typing import Any

from django.core.management.base import BaseCommand

from .vapid import keys_new


def vapid_keys_new(cmd: BaseCommand, options: dict[str, Any]) -> None:
    private, public = keys_new()
    # Lines for the environment file; the public key is worked out from the private one at run time,
    # and printed only so an operator can compare it with what browsers subscribed with.
    cmd.stdout.write(f"HITL_VAPID_PRIVATE_KEY={private}")
    cmd.stdout.write(f"HITL_VAPID_PUBLIC_KEY={public}")


def register(subparsers: argparse._SubParsersAction) -> None:
    vapid = subparsers.add_parser("vapid-keys", help="make the Web Push (VAPID) key pair")
    vs = vapid.add_subparsers(dest="vapid_command", required=True, metavar="new")
    new = vs.add_parser("new", help="print a new key pair as HITL_VAPID_… lines for the environment")
    new.set_defaults(handler=vapid_keys_new)


__all__ = ["register"]
