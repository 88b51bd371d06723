"""CLI: `hitl comment APR --as EMAIL TEXT`, `hitl claim APR --as EMAIL [--release]` — the same services as the API."""

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from approvals.exceptions import ApprovalNotFound
from approvals.review import selectors as approval_selectors
from approvals.review.permissions import may_decide
from collaboration import services
from collaboration.models import CommentVia
from collaboration.presenters import claim_line
from common.exceptions import DomainError
from workspaces.access import actor_for_user
from workspaces.cli import get_user


def _approval_and_actor(options: dict[str, Any]):
    try:
        approval = approval_selectors.approval_get(workspace=None, public_id=options["id"])
    except ApprovalNotFound:
        raise CommandError(f"No approval request {options['id']!r}; list them with `hitl pending`.") from None
    user = get_user(options["as_email"])
    actor = actor_for_user(user=user, workspace=approval.workspace)
    if not may_decide(actor, approval):
        raise CommandError(f"{user.email} is not a reviewer or admin of {approval.workspace.slug}.")
    return approval, actor


def comment(cmd: BaseCommand, options: dict[str, Any]) -> None:
    approval, actor = _approval_and_actor(options)
    try:
        added = services.comment_add(approval=approval, user=actor.user, text=options["text"], via=CommentVia.CLI)
    except DomainError as refused:
        raise CommandError(refused.message) from None
    cmd.stdout.write(f"{added.public_id}: commented on {approval.public_id}")


def claim(cmd: BaseCommand, options: dict[str, Any]) -> None:
    approval, actor = _approval_and_actor(options)
    try:
        if options["release"]:
            released = services.claim_release(approval=approval, user=actor.user, is_admin=actor.is_admin)
            cmd.stdout.write(
                f"Released {approval.public_id}." if released else f"Nobody had claimed {approval.public_id}."
            )
            return
        taken, _ = services.claim_take(approval=approval, user=actor.user)
    except DomainError as refused:
        raise CommandError(refused.message) from None
    cmd.stdout.write(claim_line(taken, user=actor.user) + f": {approval.public_id}")


def register(subparsers: argparse._SubParsersAction) -> None:
    c = subparsers.add_parser("comment", help="comment on a request (never decides)")
    c.add_argument("id", metavar="APR")
    c.add_argument("--as", dest="as_email", metavar="EMAIL", required=True, help="the reviewer commenting")
    c.add_argument("text", metavar="TEXT", help="at most 2,000 characters")
    c.set_defaults(handler=comment)

    k = subparsers.add_parser("claim", help='"I\'m on it": claim a pending request (or --release it)')
    k.add_argument("id", metavar="APR")
    k.add_argument("--as", dest="as_email", metavar="EMAIL", required=True)
    k.add_argument("--release", action="store_true", help="release the claim (its claimant or an admin)")
    k.set_defaults(handler=claim)
