"""CLI: `hitl pending`, `hitl approve`, `hitl deny` (docs/api.md, CLI) — the reviewer's queue on the host."""

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from passkeys.exceptions import PasskeyRequired
from workspaces.access import actor_for_user
from workspaces.cli import get_user, get_workspace

from . import edits, selectors
from .decide import approval_decide
from .exceptions import ApprovalNotFound, EditedArgumentsInvalid, EditNotAllowed, ReasonTooLong, SelfApproval
from .models import ApprovalKind, ApprovalRequest, Status
from .permissions import may_decide
from .presenters import EXPIRED_LINE, UNDELIVERABLE_LINE, card_title, decision_line, duration, quorum_line, visible


def pending(cmd: BaseCommand, options: dict[str, Any]) -> None:
    rows = ApprovalRequest.objects.pending().select_related("workspace", "config").order_by("created_at", "id")
    if options.get("workspace"):
        rows = rows.filter(workspace=get_workspace(options["workspace"]))
    now = timezone.now()
    count = 0
    for approval in rows.iterator(chunk_size=500):
        count += 1
        cmd.stdout.write(
            "\t".join(
                [
                    approval.public_id,
                    approval.workspace.slug,
                    f"{approval.config.public_id}@{approval.config_version}",
                    card_title(approval),
                    visible(approval.caller) or "—",
                    f"expires in {duration(approval.expires_at - now)}",
                ]
            )
        )
    if not count:
        cmd.stdout.write("No pending requests.")


def _decide(cmd: BaseCommand, options: dict[str, Any], *, yes: bool, reason: str, edited: str | None = None) -> None:
    try:
        approval = selectors.approval_get(workspace=None, public_id=options["id"])
    except ApprovalNotFound:
        raise CommandError(f"No approval request {options['id']!r}; list them with `hitl pending`.") from None
    user = get_user(options["as_email"])
    if not may_decide(actor_for_user(user=user, workspace=approval.workspace), approval):
        raise CommandError(f"{user.email} is not a reviewer or admin of {approval.workspace.slug}; they cannot decide.")
    if approval.kind == ApprovalKind.TOKEN_CAP:
        decision = "proceed" if yes else "stop"
    else:
        decision = "approve" if yes else "reject"
    try:
        # --arguments: approve these instead of the proposal (rules with allow_edit; approvals/edits.py checks them).
        arguments = edits.parse_edited(edited) if edited is not None else None
        approval, already = approval_decide(
            approval=approval,
            user=user,
            decision=decision,
            reason=reason,
            arguments=arguments,
            edit=edited is not None,
        )
    except EditedArgumentsInvalid as invalid:
        raise CommandError("; ".join(f"{path}: {message}" for path, message in invalid.fields.items())) from None
    except (SelfApproval, ReasonTooLong, PasskeyRequired, EditNotAllowed) as refused:
        raise CommandError(refused.message) from None
    title = card_title(approval)
    line = decision_line(approval)
    if approval.status == Status.PENDING:
        # A vote on a quorum request: recorded (or recorded before), the request still waits.
        done = "already approved" if already else "approved"
        cmd.stdout.write(f"{user.email} {done} {approval.public_id} ({title}): {quorum_line(approval)}.")
        return
    if already:
        # The first decision stands; say what it was rather than failing.
        first = line if line in (EXPIRED_LINE, UNDELIVERABLE_LINE) else f"already {line[0].lower()}{line[1:]}"
        cmd.stdout.write(f"{approval.public_id} ({title}) was {first}; nothing changed.")
    else:
        action = approval.get_decision_action_display().lower()
        cmd.stdout.write(f"{line}: {approval.public_id} ({title}) — the engine will {action}.")
    if approval.reason and approval.effective_status() != Status.EXPIRED:
        cmd.stdout.write(f"Reason: {visible(approval.reason)}")
    if edits.was_edited(approval):
        cmd.stdout.write(f"Approved with edits: the engine runs call digest {edits.decision_digest(approval)}.")


def approve(cmd: BaseCommand, options: dict[str, Any]) -> None:
    _decide(cmd, options, yes=True, reason=options.get("note") or "", edited=options.get("arguments"))


def deny(cmd: BaseCommand, options: dict[str, Any]) -> None:
    _decide(cmd, options, yes=False, reason=options["reason"])


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("pending", help="list pending approval requests, oldest first")
    p.add_argument("--workspace", metavar="SLUG", help="only this workspace's requests")
    p.set_defaults(handler=pending)

    a = subparsers.add_parser("approve", help="approve a request (proceed past cap, for a token cap request)")
    a.add_argument("id", metavar="APR")
    a.add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the reviewer deciding")
    a.add_argument("--note", default="", help="an optional note, recorded with the decision")
    a.add_argument(
        "--arguments",
        metavar="JSON",
        help="approve these arguments instead of the proposal (rules with allow_edit; checked against the schema)",
    )
    a.set_defaults(handler=approve)

    d = subparsers.add_parser("deny", help="reject a request (stop the run, for a token cap request)")
    d.add_argument("id", metavar="APR")
    d.add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the reviewer deciding")
    d.add_argument("--reason", required=True, help="why; passed back to the agent")
    d.set_defaults(handler=deny)
