"""Reads: a request's comments and claim, a reviewer's snoozes, a run's requests in order."""

from datetime import datetime

from django.db.models import Q, QuerySet
from django.utils import timezone

from approvals.models import ApprovalRequest
from approvals.review.selectors import approvals_for, decode_cursor, with_votes
from collaboration.models import Claim, Comment, Snooze
from workspaces.access import Actor
from workspaces.models import Workspace

# A run's story in one answer: more is paged (`next`), oldest first.
RUN_PAGE_MAX = 1000


def comments_of(approval: ApprovalRequest) -> list[Comment]:
    return list(Comment.objects.filter(approval=approval).order_by("created_at", "id"))


def claim_of(approval: ApprovalRequest) -> Claim | None:
    return Claim.objects.filter(approval=approval).first()


def claims_of(pks: list[int]) -> dict[int, Claim]:
    return {claim.approval_id: claim for claim in Claim.objects.filter(approval_id__in=pks)}


def snoozed_pks(*, workspace_id: int, user_id: int, now: datetime | None = None) -> QuerySet:
    """The requests `user` snoozed in this workspace and still wants hidden (a subquery of pks)."""
    return Snooze.objects.filter(workspace_id=workspace_id, user_id=user_id, until__gt=now or timezone.now()).values(
        "approval_id"
    )


def snoozed_for(actor: Actor) -> QuerySet | None:
    if actor.user is None:
        return None
    return snoozed_pks(workspace_id=actor.workspace.pk, user_id=actor.user.pk)


def snooze_of(*, approval: ApprovalRequest, user) -> Snooze | None:
    return Snooze.objects.filter(approval=approval, user=user, until__gt=timezone.now()).first()


# What a line of "This run so far" reads of each request: a run of a thousand hydrates no more.
STORY_FIELDS = (
    "public_id",
    "kind",
    "status",
    "title",
    "target",
    "operation",
    "boundary",
    "created_at",
    "expires_at",
    "decided_at",
    "decided_by_email",
    "on_behalf_of",  # "Approved by X on behalf of Y" (decided_by)
    "undeliverable",
    "execution_status",
    "execution_id",
)


def run_requests(
    *, workspace: Workspace, run_id: str, cursor: str = "", limit: int = RUN_PAGE_MAX, brief: bool = False
) -> tuple[list[ApprovalRequest], bool]:
    """The run's requests oldest first (through apr_run), after `cursor`; and whether more follow.

    brief: only STORY_FIELDS loaded (the page's lines), not the whole request the API answers.
    """
    rows = approvals_for(workspace).filter(run_id=run_id)
    if brief:
        rows = rows.select_related(None).only(*STORY_FIELDS)
    position = decode_cursor(cursor) if cursor else None
    if position:
        created_at, pk = position
        rows = rows.filter(Q(created_at__gt=created_at) | Q(created_at=created_at, pk__gt=pk))
    page = list(rows.order_by("created_at", "id")[: limit + 1])
    more = len(page) > limit
    return (page[:limit] if brief else with_votes(page[:limit])), more
