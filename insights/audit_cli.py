"""CLI: `hitl audit verify --workspace SLUG [--anchor SEQ:HASH]` recomputes the chain (API.md, Audit)."""

import argparse
import re
import sys
from typing import Any

from django.core.management.base import BaseCommand

from audit.chain import first_broken
from audit.selectors import audit_head, audit_records
from audit.services import audit_seal
from workspaces.cli import get_workspace

ANCHOR = re.compile(r"(?P<seq>\d+):(?P<hash>[0-9a-f]{16,64})")


def _parse_anchor(value: str) -> tuple[int, str]:
    match = ANCHOR.fullmatch(value.strip().lower())
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not an anchor: give SEQ:HASH as the audit page or an export's Audit-Chain-Head header "
            "shows it (at least 16 hex characters of the hash)."
        )
    return int(match["seq"]), match["hash"]


class _Walk:
    """Counts the records as they stream past, and keeps the hash of the one the anchor names."""

    def __init__(self, anchor_seq: int | None) -> None:
        self.count, self.anchor_seq, self.anchor_hash = 0, anchor_seq, None

    def __call__(self, records):
        for record in records:
            self.count += 1
            if record["seq"] == self.anchor_seq:
                self.anchor_hash = record["hash"]
            yield record


def verify(cmd: BaseCommand, options: dict[str, Any]) -> None:
    workspace = get_workspace(options["workspace"])
    anchor = options.get("anchor")
    audit_seal(workspace_id=workspace.pk)  # chain what was appended since the last seal, then check it all
    walk = _Walk(anchor[0] if anchor else None)
    broken = first_broken(walk(audit_records(workspace_id=workspace.pk)))
    # Records cut off the end leave an intact but shorter chain: the head still knows the last seq.
    head_seq, _ = audit_head(workspace_id=workspace.pk)
    if broken is None and head_seq > walk.count:
        broken = walk.count + 1
    if broken is not None:
        cmd.stderr.write(
            f"Chain broken at seq {broken} of workspace {workspace.slug}: that record was changed, removed or inserted."
        )
        sys.exit(1)
    # The head lives in the same database as the records: whoever can empty the one can reset the
    # other. The anchor was noted outside it (a download's header, the audit page), so it cannot be.
    if anchor and (walk.anchor_hash is None or not walk.anchor_hash.startswith(anchor[1])):
        found = "is missing" if walk.anchor_hash is None else f"has hash {walk.anchor_hash[:16]}…"
        cmd.stderr.write(
            f"Anchor not found in workspace {workspace.slug}: record {anchor[0]} {found}, the log holds "
            f"{walk.count} records. The log was emptied, cut short or rewritten since the anchor was taken."
        )
        sys.exit(1)
    suffix = f", anchor {anchor[0]} holds" if anchor else ""
    cmd.stdout.write(f"{walk.count} records, chain intact{suffix}")


def register(subparsers: argparse._SubParsersAction) -> None:
    audit = subparsers.add_parser("audit", help="the audit log")
    commands = audit.add_subparsers(dest="audit_command", required=True, metavar="verify")
    check = commands.add_parser("verify", help="recompute a workspace's hash chain; exit 1 naming the first broken seq")
    check.add_argument("--workspace", required=True, metavar="SLUG")
    check.add_argument(
        "--anchor",
        type=_parse_anchor,
        metavar="SEQ:HASH",
        help="a chain head noted earlier (audit page, an export's Audit-Chain-Head header): it must still be there",
    )
    check.set_defaults(handler=verify)
