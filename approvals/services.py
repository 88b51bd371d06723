"""Writes on approval requests. The database, not Python, decides who wins a race."""

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .models import EXPIRED_REASON, Action, ApprovalKind, ApprovalRequest, Status
from .notify import notify_changed

# decision word → (the kind it decides, resulting status, the action the engine takes)
DECISIONS: dict[str, tuple[str, str, str]] = {
    "approve": (ApprovalKind.GATE, Status.APPROVED, Action.RESUME),
    "reject": (ApprovalKind.GATE, Status.REJECTED, Action.HALT),
    "proceed": (ApprovalKind.TOKEN_CAP, Status.APPROVED, Action.PROCEED_PAST_CAP),
    "stop": (ApprovalKind.TOKEN_CAP, Status.REJECTED, Action.STOP_RUN),
}


class WrongDecision(ValueError):
    """approve/reject on a token cap card, or proceed/stop on a gate request."""


def approval_decide(
    *, approval: ApprovalRequest, user, decision: str, reason: str = ""
) -> tuple[ApprovalRequest, bool]:
    """Record a decision once. Returns the request as it now is, and whether it was already decided.

    A conditional UPDATE on (status = pending, not yet expired) is the arbiter: of two reviewers
    deciding at the same instant exactly one updates the row; the other gets the first decision.
    """
    if decision not in DECISIONS:
        raise WrongDecision(f"decision must be one of {', '.join(DECISIONS)}")
    kind, status, action = DECISIONS[decision]
    if approval.kind != kind:
        pair = "approve or reject" if approval.kind == ApprovalKind.GATE else "proceed or stop"
        raise WrongDecision(f"A {approval.get_kind_display().lower()} request is decided with {pair}, not {decision}")
    now = timezone.now()
    with transaction.atomic():
        won = ApprovalRequest.objects.filter(pk=approval.pk, status=Status.PENDING, expires_at__gt=now).update(
            status=status,
            decision_action=action,
            decided_at=now,
            decided_by=user,
            decided_by_email=getattr(user, "email", "") or "",
            reason=reason,
        )
        if won:
            notify_changed(approval.public_id)
    if not won:
        approval_expire_if_overdue(approval=approval)
    approval.refresh_from_db()
    return approval, not won


def approval_expire_if_overdue(*, approval: ApprovalRequest) -> ApprovalRequest:
    """Persist the expiry of an overdue request (a read already sees it expired, this makes it so)."""
    if approval.status == Status.PENDING and approval.is_overdue():
        expire_requests(ApprovalRequest.objects.filter(pk=approval.pk))
        approval.refresh_from_db()
    return approval


def expire_requests(queryset) -> int:
    """Mark the overdue pending requests of `queryset` expired; returns how many were."""
    now = timezone.now()
    with transaction.atomic():
        overdue = queryset.filter(status=Status.PENDING, expires_at__lte=now)
        public_ids = list(overdue.values_list("public_id", flat=True))
        if not public_ids:
            return 0
        count = ApprovalRequest.objects.filter(
            public_id__in=public_ids, status=Status.PENDING, expires_at__lte=now
        ).update(status=Status.EXPIRED, decided_at=F("expires_at"), reason=EXPIRED_REASON, decision_action="")
        for public_id in public_ids:
            notify_changed(public_id)
    return count
