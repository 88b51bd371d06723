"""CLI: `hitl audit verify --workspace SLUG` recomputes the chain (API.md, Audit)."""

import argparse
import sys
from typing import Any

from django.core.management.base import BaseCommand

from workspaces.cli import get_workspace

from .chain import first_broken
from .models import AuditHead
from .selectors import audit_records
from .services import audit_seal


def _counted(records, counter: list[int]):
    for record in records:
        counter[0] += 1
        yield record


def verify(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["workspace"])
    audit_seal(workspace_id=workspace.pk)  # chain what was appended since the last seal, then check it all
    counter = [0]
    broken = first_broken(_counted(audit_records(workspace_id=workspace.pk), counter))
    # Records cut off the end leave an intact but shorter chain: the head still knows the last seq.
    head = AuditHead.objects.filter(pk=workspace.pk).values_list("seq", flat=True).first() or 0
    if broken is None and head > counter[0]:
        broken = counter[0] + 1
    if broken is None:
        cmd.stdout.write(f"{counter[0]} records, chain intact")
        return
    cmd.stderr.write(
        f"Chain broken at seq {broken} of workspace {workspace.slug}: that record was changed, removed or inserted."
    )
    sys.exit(1)


def register(subparsers: argparse._SubParsersAction) -> None:
    audit = subparsers.add_parser("audit", help="the audit log")
    commands = audit.add_subparsers(dest="audit_command", required=True, metavar="verify")
    check = commands.add_parser("verify", help="recompute a workspace's hash chain; exit 1 naming the first broken seq")
    check.add_argument("--workspace", required=True, metavar="SLUG")
    check.set_defaults(handler=verify)
