"""The insights page's numbers: SQL aggregates over indexed rows, a bounded number of queries.

Closed days (requests registered two or more UTC days ago: all decided or expired by now, and
never changed again) are aggregated once into DailyRollup. Each page view then reads those rows,
aggregates only the two open days live, and counts the pending queue: the cost follows the
traffic of the last two days, not the size of the history.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from django.db import connection, transaction
from django.db.models import Count, Min
from django.utils import timezone

from approvals.models import ApprovalRequest, Status
from rules.models import Config
from workspaces.models import Workspace

from .models import DailyRollup, Grain, RolledUpDay

WINDOW_DAYS = 30
RUBBER_STAMP_SECONDS = 5
OUTCOMES = ("approved", "rejected", "expired")

ROW_FIELDS = (
    "day",
    "grain",
    "outcome",
    "config_id",
    "rule_id",
    "reviewer",
    "count",
    "fast",
    "failed",
    "seconds",
    "p50",
    "p90",
)

_AGGREGATE_SQL = f"""
SELECT day, GROUPING(day, outcome, reviewer), coalesce(outcome, ''), config_id, coalesce(rule_id, ''),
       coalesce(reviewer, ''), count(*), count(*) FILTER (WHERE secs < {RUBBER_STAMP_SECONDS}),
       count(*) FILTER (WHERE failed), coalesce(sum(secs), 0),
       percentile_cont(0.5) WITHIN GROUP (ORDER BY secs), percentile_cont(0.9) WITHIN GROUP (ORDER BY secs)
FROM (
    SELECT (created_at AT TIME ZONE 'UTC')::date AS day,
           CASE WHEN status = 'pending' THEN 'expired' ELSE status END AS outcome,
           config_id, rule_id,
           CASE WHEN status IN ('approved', 'rejected') THEN decided_by_email ELSE '' END AS reviewer,
           CASE WHEN status IN ('approved', 'rejected')
                THEN extract(epoch FROM decided_at - created_at)::float8 END AS secs,
           execution_status = 'failed' AS failed
    FROM (
        -- Decided rows through the history's partial index, overdue pending ones through
        -- apr_overdue: the requests still waiting (most of the open days' rows) are never read.
        SELECT * FROM {ApprovalRequest._meta.db_table}
        WHERE workspace_id = %(workspace)s AND created_at >= %(start)s AND created_at < %(end)s
          AND status IN ('approved', 'rejected', 'expired')
        UNION ALL
        SELECT * FROM {ApprovalRequest._meta.db_table}
        WHERE workspace_id = %(workspace)s AND created_at >= %(start)s AND created_at < %(end)s
          AND status = 'pending' AND expires_at <= %(now)s
    ) AS resolved
) AS requests
GROUP BY GROUPING SETS ((day, outcome, config_id, rule_id, reviewer), (day, reviewer), (day), (reviewer), ())
"""


def _midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def aggregate(*, workspace_id: int, first: date, last: date, now: datetime) -> list[dict]:
    """Rows of every grain for the requests registered on days first..last (UTC); overdue pending count as expired."""
    params = {
        "workspace": workspace_id,
        "start": _midnight(first),
        "end": _midnight(last + timedelta(days=1)),
        "now": now,
    }
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(_AGGREGATE_SQL, params)
            return [dict(zip(ROW_FIELDS, row, strict=True)) for row in cursor.fetchall()]
    return _aggregate_in_python(**params)


def _aggregate_in_python(*, workspace: int, start: datetime, end: datetime, now: datetime) -> list[dict]:
    """SQLite has no percentile_cont nor GROUPING SETS: the same rows, computed here (small databases only)."""
    requests = ApprovalRequest.objects.filter(
        workspace_id=workspace, created_at__gte=start, created_at__lt=end
    ).values_list(
        "created_at",
        "status",
        "expires_at",
        "config_id",
        "rule_id",
        "decided_by_email",
        "decided_at",
        "execution_status",
    )
    groups: dict[tuple, list] = defaultdict(list)
    for created, status, expires, config_id, rule_id, email, decided, execution in requests:
        if status == Status.PENDING and expires > now:
            continue
        outcome = Status.EXPIRED if status == Status.PENDING else status
        person = outcome in (Status.APPROVED, Status.REJECTED)
        reviewer = email if person else ""
        secs = (decided - created).total_seconds() if person else None
        day = created.astimezone(UTC).date()
        fact = (secs, execution == "failed")
        for key in [
            (day, Grain.FULL, outcome, config_id, rule_id, reviewer),
            (day, Grain.REVIEWER_DAY, "", None, "", reviewer),
            (day, Grain.DAY, "", None, "", ""),
            (None, Grain.REVIEWER, "", None, "", reviewer),
            (None, Grain.ALL, "", None, "", ""),
        ]:
            groups[key].append(fact)
    rows = []
    for key, facts in groups.items():
        seconds = [secs for secs, _ in facts if secs is not None]
        rows.append(
            dict(
                zip(ROW_FIELDS[:6], key, strict=True),
                count=len(facts),
                fast=sum(1 for secs in seconds if secs < RUBBER_STAMP_SECONDS),
                failed=sum(1 for _, failed in facts if failed),
                seconds=sum(seconds),
                p50=_percentile(seconds, 0.5),
                p90=_percentile(seconds, 0.9),
            )
        )
    return rows


def _percentile(values: list[float], fraction: float) -> float | None:
    """percentile_cont: linear interpolation between the closest ranks."""
    if not values:
        return None
    values = sorted(values)
    rank = fraction * (len(values) - 1)
    low = int(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


def _rolled_up(*, workspace_id: int, first: date, last: date, now: datetime) -> list[dict]:
    """The closed days' rows, aggregating (once, under the workspace's row lock) any day not yet rolled up."""
    days = {first + timedelta(days=n) for n in range((last - first).days + 1)}
    done = set(
        RolledUpDay.objects.filter(workspace_id=workspace_id, day__gte=first, day__lte=last).values_list(
            "day", flat=True
        )
    )
    if days - done:
        with transaction.atomic():
            Workspace.objects.select_for_update().filter(pk=workspace_id).values_list("pk").first()
            done = set(
                RolledUpDay.objects.filter(workspace_id=workspace_id, day__gte=first, day__lte=last).values_list(
                    "day", flat=True
                )
            )
            missing = days - done
            if missing:
                rows = aggregate(workspace_id=workspace_id, first=min(missing), last=max(missing), now=now)
                DailyRollup.objects.bulk_create(
                    DailyRollup(workspace_id=workspace_id, **row)
                    for row in rows
                    if row["day"] in missing and row["grain"] in (Grain.FULL, Grain.REVIEWER_DAY, Grain.DAY)
                )
                RolledUpDay.objects.bulk_create(RolledUpDay(workspace_id=workspace_id, day=day) for day in missing)
    return list(
        DailyRollup.objects.filter(workspace_id=workspace_id, day__gte=first, day__lte=last).values(*ROW_FIELDS)
    )


@dataclass
class Breakdown:
    """Counts by outcome for one config, rule or reviewer, with its rubber stamps and failures."""

    label: str
    counts: dict = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    fast: int = 0
    failed: int = 0
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def decided_by_people(self) -> int:
        return self.counts["approved"] + self.counts["rejected"]

    @property
    def mean_seconds(self) -> float | None:
        return self.seconds / self.decided_by_people if self.decided_by_people else None


@dataclass
class Insights:
    days: list[date]
    pending: int
    oldest_pending_at: datetime | None
    per_day: dict  # day -> {outcome: count}
    p50_per_day: dict  # day -> seconds or None
    p90_per_day: dict
    recent_p50: float | None  # the two open days, exact
    recent_p90: float | None
    totals: Breakdown
    by_config: list[Breakdown]
    by_rule: list[Breakdown]
    by_reviewer: list[Breakdown]


def insights_for(*, workspace: Workspace, reviewer: str | None = None, now: datetime | None = None) -> Insights:
    """The last 30 days for the whole workspace, or one reviewer's own decisions (`reviewer` = their email)."""
    now = now or timezone.now()
    today = now.astimezone(UTC).date()
    first, open_from = today - timedelta(days=WINDOW_DAYS - 1), today - timedelta(days=1)
    rows = _rolled_up(workspace_id=workspace.pk, first=first, last=open_from - timedelta(days=1), now=now)
    rows += aggregate(workspace_id=workspace.pk, first=open_from, last=today, now=now)

    def mine(row: dict) -> bool:
        return reviewer is None or row["reviewer"] == reviewer

    days = [first + timedelta(days=n) for n in range(WINDOW_DAYS)]
    per_day = {day: dict.fromkeys(OUTCOMES, 0) for day in days}
    p50, p90 = dict.fromkeys(days), dict.fromkeys(days)
    totals = Breakdown("All")
    groups: dict[str, dict] = {"config": {}, "rule": {}, "reviewer": {}}
    recent = (None, None)
    day_grain = Grain.DAY if reviewer is None else Grain.REVIEWER_DAY
    all_grain = Grain.ALL if reviewer is None else Grain.REVIEWER
    for row in rows:
        grain = row["grain"]
        if grain == Grain.FULL and mine(row):
            per_day[row["day"]][row["outcome"]] += row["count"]
            for breakdown in (
                totals,
                groups["config"].setdefault(row["config_id"], Breakdown(str(row["config_id"]))),
                groups["rule"].setdefault(row["rule_id"] or "—", Breakdown(row["rule_id"] or "token caps")),
                groups["reviewer"].setdefault(row["reviewer"] or "—", Breakdown(row["reviewer"] or "nobody (expired)")),
            ):
                breakdown.counts[row["outcome"]] += row["count"]
                breakdown.fast += row["fast"]
                breakdown.failed += row["failed"]
                breakdown.seconds += row["seconds"]
        elif grain == day_grain and mine(row):
            p50[row["day"]], p90[row["day"]] = row["p50"], row["p90"]
        elif grain == all_grain and mine(row):
            recent = (row["p50"], row["p90"])

    names = dict(Config.objects.filter(workspace=workspace).values_list("pk", "name"))
    for config_id, breakdown in groups["config"].items():
        breakdown.label = names.get(config_id, f"config {config_id}")
    # The queue's index (workspace, status, created_at) answers both.
    queue = (
        ApprovalRequest.objects.filter(workspace=workspace)
        .pending(now)
        .aggregate(n=Count("id"), oldest=Min("created_at"))
    )

    def ranked(group: dict) -> list[Breakdown]:
        return sorted(group.values(), key=lambda b: (-b.total, b.label))[:12]

    return Insights(
        days=days,
        pending=queue["n"],
        oldest_pending_at=queue["oldest"],
        per_day=per_day,
        p50_per_day=p50,
        p90_per_day=p90,
        recent_p50=recent[0],
        recent_p90=recent[1],
        totals=totals,
        by_config=ranked(groups["config"]),
        by_rule=ranked(groups["rule"]),
        by_reviewer=ranked(groups["reviewer"]),
    )
