"""CLI: `hitl receipt-key new|rotate` and `hitl receipt verify` (docs/receipts.md)."""

import argparse
import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from hitl_client.receipts import ReceiptRefused, keys_of, verify_receipt

from approvals.apps import RECEIPT_KEY_CHECK
from approvals.receipts.keys import (
    jwks,
    kid_of,
    new_private_pem,
    private_key_from_pem,
    public_keys_from_pem,
    public_pem,
    receipt_keys,
)


def _write_secret(path: str, text: str) -> None:
    """The private key to a file only its owner reads (never over an existing one)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise CommandError(f"{path} exists already; name a new file (a key is never overwritten).") from None
    with os.fdopen(fd, "w") as out:
        out.write(text)


def key_new(cmd: BaseCommand, options: dict[str, Any]) -> None:
    pem = new_private_pem()
    kid = kid_of(private_key_from_pem(pem).public_key())
    if options.get("out"):
        _write_secret(options["out"], pem)
        cmd.stdout.write(f"Wrote a new receipt signing key (kid {kid}) to {options['out']}.")
    else:
        cmd.stdout.write(pem.rstrip())
    cmd.stderr.write(
        f"Set HITL_RECEIPT_KEY to this PEM (kid {kid}) in every server process's environment; keep it secret. "
        "To replace a key in use, run `hitl receipt-key rotate` instead: receipts signed before keep verifying."
    )


def key_rotate(cmd: BaseCommand, options: dict[str, Any]) -> None:
    if not settings.HITL_RECEIPT_KEY:
        raise CommandError("HITL_RECEIPT_KEY is not set here: rotate where the current key is configured.")
    try:
        current = private_key_from_pem(settings.HITL_RECEIPT_KEY).public_key()
        before = public_keys_from_pem(settings.HITL_RECEIPT_PREVIOUS_KEYS)
    except ImproperlyConfigured as error:
        raise CommandError(str(error)) from None
    keep = options.get("keep")
    previous = [current, *before]
    if keep is not None:
        previous = previous[: max(keep, 1)]  # the key signed with until now is always kept
    pem = new_private_pem()
    kid = kid_of(private_key_from_pem(pem).public_key())
    previous_pem = "".join(public_pem(key) for key in previous)
    if options.get("out"):
        _write_secret(options["out"], pem)
        where = f"HITL_RECEIPT_KEY: the new private key (kid {kid}), written to {options['out']}"
    else:
        where = f"HITL_RECEIPT_KEY: the new private key (kid {kid}):\n{pem.rstrip()}"
    cmd.stdout.write(
        "Rotate in every server process's environment, then restart them:\n"
        f"1. {where}\n"
        "2. HITL_RECEIPT_PREVIOUS_KEYS: these public keys (the one signed with until now first), so receipts "
        f"signed with them keep verifying — {', '.join(kid_of(key) for key in previous)}:\n{previous_pem.rstrip()}\n"
        "Engines fetch /.well-known/jwks.json again when they meet the new kid. Drop a key from "
        "HITL_RECEIPT_PREVIOUS_KEYS (or rotate with --keep) only once no receipt signed with it needs checking."
    )


def verify(cmd: BaseCommand, options: dict[str, Any]) -> None:
    if options.get("jwks"):
        try:
            document = json.loads(Path(options["jwks"]).read_text())
        except (OSError, ValueError) as error:
            raise CommandError(f"Cannot read the JWKS {options['jwks']}: {error}") from None
    else:
        try:
            receipt_keys()
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        document = jwks()  # this portal's own, as /.well-known/jwks.json publishes it: no network
    checks: dict[str, Any] = {}
    if options.get("id"):
        checks["approval_id"] = options["id"]
    if options.get("digest"):
        checks["call_digest"] = options["digest"]
    try:
        claims = verify_receipt(options["jws"].strip(), keys_of(document), **checks)
    except ReceiptRefused as refused:
        raise CommandError(f"Refused: {refused}") from None
    cmd.stdout.write(json.dumps(claims, indent=2, ensure_ascii=False))
    cmd.stdout.write(f"Valid: {claims['sub']} {claims['status']} ({claims['action']}), signed by this portal's key.")


def register(subparsers: argparse._SubParsersAction) -> None:
    k = subparsers.add_parser("receipt-key", help="make or rotate the key receipts are signed with")
    actions = k.add_subparsers(dest="receipt_key_command", required=True, metavar="action")
    n = actions.add_parser("new", help="print (or --out FILE) a new Ed25519 private key for HITL_RECEIPT_KEY")
    n.add_argument("--out", metavar="FILE", help="write it to FILE (mode 600) instead of printing it")
    # Making or rotating the key needs none configured yet: the startup check that asks for one stands aside.
    n.set_defaults(handler=key_new, silenced_checks=[RECEIPT_KEY_CHECK])
    r = actions.add_parser("rotate", help="a new key, and the previous keys to publish so old receipts verify")
    r.add_argument("--out", metavar="FILE", help="write the new private key to FILE (mode 600)")
    r.add_argument("--keep", type=int, metavar="N", help="keep only the N most recent previous keys (default: all)")
    r.set_defaults(handler=key_rotate, silenced_checks=[RECEIPT_KEY_CHECK])

    v = subparsers.add_parser("receipt", help="check a receipt")
    checks = v.add_subparsers(dest="receipt_command", required=True, metavar="action")
    c = checks.add_parser("verify", help="verify a receipt (a compact JWS) offline against the JWKS")
    c.add_argument("jws", metavar="JWS")
    c.add_argument("--jwks", metavar="FILE", help="a saved JWKS (default: this portal's keys, as configured)")
    c.add_argument("--id", metavar="APR", help="the request it must name (sub)")
    c.add_argument("--digest", metavar="HEX", help="the call_digest it must approve")
    c.set_defaults(handler=verify)
