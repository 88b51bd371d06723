"""The insights' facts computed directly from the requests, exactly: the reference the rollups are tested against."""

from collections import defaultdict
from datetime import UTC, date, datetime, timedelta

from approvals.models import ApprovalRequest, Status
from insights import rollup
from insights.rollup import RUBBER_STAMP_SECONDS
from insights.selectors import OUTCOMES, ROW_FIELDS, Facts


def percentile(values: list[float], fraction: float) -> float | None:
    """percentile_cont: linear interpolation between the closest ranks."""
    if not values:
        return None
    values = sorted(values)
    rank = fraction * (len(values) - 1)
    low = int(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


def facts_directly(*, workspace_id: int, reviewer: str | None, now: datetime) -> Facts:
    """The same facts from the requests themselves, exact (small databases only: it reads the window)."""
    first = rollup.window_start(now)
    requests = ApprovalRequest.objects.filter(
        workspace_id=workspace_id, created_at__gte=first - rollup.lifetime(), created_at__lt=now
    ).values_list(
        "created_at",
        "status",
        "expires_at",
        "config_id",
        "rule_id",
        "decided_by_email",
        "decided_at",
        "execution_status",
        "undeliverable",
    )
    groups: dict[tuple, list] = defaultdict(list)
    times: dict[date, list[float]] = defaultdict(list)
    yesterday = now.astimezone(UTC).date() - timedelta(days=1)
    for created, status, expires, config_id, rule_id, email, decided, execution, undeliverable in requests:
        person = status in (Status.APPROVED, Status.REJECTED)
        if status not in OUTCOMES and status != Status.PENDING:
            continue  # a question answered or declined: counted by questions_for, as the rollups do
        if status == Status.PENDING and expires > now:
            continue  # still waiting
        resolved = expires if status == Status.PENDING else decided  # the sweep sets decided_at to the deadline
        if not first <= resolved < now:
            continue
        who = email if person else ""
        if reviewer is not None and who != reviewer:
            continue
        day = resolved.astimezone(UTC).date()
        secs = max((decided - created).total_seconds(), 0) if person else None
        outcome = Status.EXPIRED if status == Status.PENDING else status
        if status == Status.EXPIRED and undeliverable:
            outcome = "undeliverable"
        failed = status == Status.APPROVED and execution == "failed"
        groups[(day, str(outcome), config_id, rule_id, who)].append((secs, failed))
        if secs is not None:
            times[day].append(secs)
    rows = []
    for key, facts in groups.items():
        seconds = [secs for secs, _ in facts if secs is not None]
        rows.append(
            dict(
                zip(ROW_FIELDS[:5], key, strict=True),
                count=len(facts),
                fast=sum(1 for secs in seconds if secs < RUBBER_STAMP_SECONDS),
                failed=sum(1 for _, failed in facts if failed),
                seconds=sum(seconds),
            )
        )
    recent = [secs for day, values in times.items() if day >= yesterday for secs in values]
    return Facts(
        rows=rows,
        percentiles={day: (percentile(v, 0.5), percentile(v, 0.9)) for day, v in times.items()},
        recent=(percentile(recent, 0.5), percentile(recent, 0.9)),
    )
