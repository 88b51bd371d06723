"""Notification delivery health, for admins: the page's window of deliveries per channel, and the latest
failures — two queries on the outbox's log."""

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count
from django.utils import timezone

from contacts.models import Channel, Delivery, DeliveryStatus
from workspaces.models import Workspace

from . import rollup

RECENT_FAILURES = 10


@dataclass
class ChannelHealth:
    channel: str
    label: str
    delivered: int = 0
    failed: int = 0
    pending: int = 0
    skipped: int = 0  # not sent: the request was decided first
    attempts: list = field(default_factory=list)  # (attempts, how many finished deliveries took that many)

    @property
    def failure_rate(self) -> float | None:
        """Of the deliveries that finished (delivered or given up): pending ones may still go either way."""
        finished = self.delivered + self.failed
        return self.failed / finished if finished else None

    @property
    def failure_rate_text(self) -> str:
        rate = self.failure_rate
        return "—" if rate is None else f"{rate:.1%}"

    @property
    def median_attempts_text(self) -> str:
        value = self.median_attempts
        return "—" if value is None else f"{value:g}"

    @property
    def median_attempts(self) -> float | None:
        """Over finished deliveries; attempts are small integers, so counted per value, not one by one."""
        total = sum(n for _, n in self.attempts)
        if not total:
            return None

        def at(rank: int) -> int:
            for attempts, n in self.attempts:
                if rank < n:
                    return attempts
                rank -= n
            raise AssertionError("rank beyond the total")

        return (at((total - 1) // 2) + at(total // 2)) / 2


@dataclass
class DeliveryHealth:
    channels: list[ChannelHealth]
    recent_failures: list[dict]  # contact name, channel, event, attempts, last_error, created_at, request id


def delivery_health(*, workspace: Workspace, now: datetime | None = None) -> DeliveryHealth:
    """Deliveries of the page's window per channel, and the latest failures — two queries on dlv_log.

    Only the contact's name is read from the frozen recipient: never its address reference or secret.
    `last_error` names the variable or the HTTP status (contacts.outbox), never the address.
    """
    now = now or timezone.now()
    recent = Delivery.objects.filter(workspace=workspace, created_at__gte=rollup.window_start(now))
    labels = dict(Channel.choices)
    channels: dict[str, ChannelHealth] = {}
    # Grouped by (channel, status, attempts): a few dozen rows however many deliveries.
    for channel, status, attempts, n in (
        recent.order_by().values_list("channel", "status", "attempts").annotate(n=Count("*"))
    ):
        health = channels.setdefault(channel, ChannelHealth(channel, labels.get(channel, channel)))
        if status == DeliveryStatus.SENT:
            health.delivered += n
        elif status == DeliveryStatus.FAILED:
            health.failed += n
        elif status == DeliveryStatus.SKIPPED:
            health.skipped += n
            continue  # no attempt to count
        else:
            health.pending += n
        if status != DeliveryStatus.PENDING:
            health.attempts.append((attempts, n))
    for health in channels.values():
        health.attempts.sort()
    failures = list(
        recent.filter(status=DeliveryStatus.FAILED)
        .order_by("-created_at", "-id")
        .values("recipient__name", "channel", "event", "attempts", "last_error", "created_at", "approval__public_id")[
            :RECENT_FAILURES
        ]
    )
    for failure in failures:
        failure["contact"] = failure.pop("recipient__name") or "—"
        failure["request"] = failure.pop("approval__public_id")
    return DeliveryHealth(channels=sorted(channels.values(), key=lambda h: h.label), recent_failures=failures)
