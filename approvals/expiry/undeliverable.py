"""Undeliverable: a request nobody could be told of, and nobody opened, ends instead of waiting out its deadline.

API.md ("Reach"): when a request's rule says `on_unreachable: "reject"`, a request none of whose
notifications could be delivered (each one failed, or the rule names nobody) and that nobody has
opened becomes undeliverable HITL_UNDELIVERABLE_SECONDS after it was registered: expired,
`decision.undeliverable: true`, a reason that says nobody could be reached — never a person's
rejection. Under `"wait"` (the default) such a request waits for its deadline like any other.

"Opened" is recorded on the request (`opened_at`, once, while pending) when a signed-in member of
its workspace loads its page (approval_mark_opened): a person saw it, whatever the outbox managed.
A one-click link's page does not count — mail scanners open links — but its email was delivered,
which already counts.

The sweep (approvals.tasks.sweep_overdue, every minute) picks candidates here — the rule's choice
lives in the frozen version, read from the process's cache — and the expiry statement
(approvals.expiry.expire) ends them, re-checking the deliveries and `opened_at` under the row lock.
"""

from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from approvals.expiry.expire import approvals_end_undeliverable
from approvals.models import ApprovalRequest, Status
from contacts.models import Delivery, DeliveryStatus
from rules.versions import frozen_versions
from rules.vocabulary import OnUnreachable

BATCH = 500


def approval_mark_opened(*, approval: ApprovalRequest) -> None:
    """A member opened the request's page: it reached someone. Recorded once, while pending."""
    if approval.opened_at is None and approval.status == Status.PENDING:
        now = timezone.now()
        ApprovalRequest.objects.filter(pk=approval.pk, status=Status.PENDING, opened_at__isnull=True).update(
            opened_at=now
        )
        approval.opened_at = now


def _reached_someone() -> Exists:
    """A notification of the request went out, or one is due and not tried yet (it may still go out)."""
    now = timezone.now()
    return Exists(
        Delivery.objects.filter(approval_id=OuterRef("pk")).filter(
            Q(status=DeliveryStatus.SENT) | Q(status=DeliveryStatus.PENDING, attempts=0, next_attempt_at__lte=now)
        )
    )


def candidates(*, now=None, limit: int = BATCH) -> list[int]:
    """Ids of pending requests old enough, unopened and unreached, whose frozen rule says reject."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.HITL_UNDELIVERABLE_SECONDS)
    rows = list(
        ApprovalRequest.objects.pending(now)
        .filter(created_at__lte=cutoff, opened_at__isnull=True)
        .exclude(rule_id="")
        .exclude(_reached_someone())
        .order_by("created_at")
        .values_list("pk", "config_id", "config_version", "rule_id")[:limit]
    )
    frozen_versions.load({(config_id, number) for _pk, config_id, number, _rule in rows})
    chosen = []
    for pk, config_id, number, rule_id in rows:
        version = frozen_versions.get(config_id, number)
        rule = version.rule(rule_id) if version else None
        if rule is not None and rule.get("on_unreachable") == OnUnreachable.REJECT:
            chosen.append(pk)
    return chosen


def approval_sweep_undeliverable() -> int:
    """End every request found undeliverable now; returns how many were."""
    total = 0
    while True:
        ids = candidates()
        ended = approvals_end_undeliverable(ids=ids, after_seconds=settings.HITL_UNDELIVERABLE_SECONDS)
        total += ended
        if len(ids) < BATCH or not ended:
            return total
