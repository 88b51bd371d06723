"""Rolling up closed hours (PostgreSQL): what the insights page reads instead of the requests table.

A request *resolves* once: a person decides it (decided_at) or its deadline passes (expires_at;
an overdue pending request counts as expired before any sweep). Neither changes afterwards, so an
hour in which requests resolved is final once it is over (plus GRACE for a decision's transaction
to commit). `roll_up` aggregates every closed hour not yet rolled up, in one transaction under the
workspace's RollupMark row, into:

- HourlyRollup: counts, rubber stamps, failures and summed times by outcome, config, rule, reviewer
  (and DayRollup: a closed day's hours summed, so the page reads one row per day, not 24);
- HourlyTimes: a histogram of times to decision per reviewer (fixed logarithmic buckets);
- DailyPercentiles: each day's exact p50 / p90 (percentile_cont over its requests), once the day closes.

It runs every few minutes from a django-q2 schedule (tasks.roll_up_all) and on a page view that
finds an hour not yet rolled up; a second run over the same hours finds the mark moved and does
nothing. Only the requests resolved since the mark (the current hour) are aggregated live.

What is not final at the end of an hour: the outcome the engine reports after an approval
(execution_status). A roll-up therefore recounts the failures of the last day's approvals
(FAILURE_HORIZON); a failure reported later than that after its approval is not counted.
"""

import math
from datetime import UTC, date, datetime, time, timedelta

from django.conf import settings
from django.db import connection, transaction

from approvals.models import ApprovalRequest

from .models import DailyPercentiles, DayRollup, HourlyRollup, HourlyTimes, RollupMark

WINDOW_DAYS = 30
RUBBER_STAMP_SECONDS = 5
# A decision's transaction commits within moments of its decided_at; an hour is rolled up this long after its end.
GRACE = timedelta(minutes=2)
FAILURE_HORIZON = timedelta(days=1)
# Histogram buckets: bucket 0 is [0, FLOOR), bucket b > 0 is [FLOOR × RATIO^(b−1), FLOOR × RATIO^b).
BUCKET_FLOOR = 0.1
BUCKET_RATIO = 1.05

TABLE = ApprovalRequest._meta.db_table

# What "By rule" groups a request under: its rule, or — for what no rule asks — its kind. A question or a
# plan is keyed by its kind ("question", "plan": never a rule id, which is rul_…); a token cap keeps "".
RULE_KEY_SQL = "CASE WHEN kind IN ('question', 'plan') THEN kind ELSE rule_id END"

# The requests of one workspace that resolved in [start, end): decided or swept ones (the sweep sets
# decided_at to the deadline) through apr_resolved, overdue pending ones through apr_overdue. Both
# read only the rows resolved in the range: rolling up an hour, or the current hour live, costs an
# hour's traffic whatever the size of the table.
RESOLVED_SQL = f"""
    SELECT decided_at AS resolved_at,
           CASE WHEN status = 'expired' AND undeliverable THEN 'undeliverable' ELSE status END AS outcome,
           config_id, {RULE_KEY_SQL} AS rule_id,
           CASE WHEN status IN ('approved', 'rejected') THEN decided_by_email ELSE '' END AS reviewer,
           CASE WHEN status IN ('approved', 'rejected')
                THEN greatest(extract(epoch FROM decided_at - created_at)::float8, 0) END AS secs,
           status = 'approved' AND execution_status = 'failed' AS failed
    FROM {TABLE}
    WHERE workspace_id = %(workspace)s AND status IN ('approved', 'rejected', 'expired')
      AND decided_at >= %(start)s AND decided_at < %(end)s
    UNION ALL
    SELECT expires_at, 'expired', config_id, {RULE_KEY_SQL}, '', NULL, false
    FROM {TABLE}
    WHERE workspace_id = %(workspace)s AND status = 'pending' AND expires_at >= %(start)s AND expires_at < %(end)s
"""

BUCKET_SQL = (
    f"CASE WHEN secs < {BUCKET_FLOOR} THEN 0 ELSE 1 + floor(ln(secs / {BUCKET_FLOOR}) / ln({BUCKET_RATIO}))::int END"
)

_HOURS_SQL = f"""
INSERT INTO {HourlyRollup._meta.db_table}
    (workspace_id, hour, outcome, config_id, rule_id, reviewer, count, fast, failed, seconds)
SELECT %(workspace)s, date_trunc('hour', resolved_at, 'UTC'), outcome, config_id, rule_id, reviewer,
       count(*), count(*) FILTER (WHERE secs < {RUBBER_STAMP_SECONDS}), count(*) FILTER (WHERE failed),
       coalesce(sum(secs), 0)
FROM ({RESOLVED_SQL}) AS resolved
GROUP BY 2, 3, 4, 5, 6
"""

_TIMES_SQL = f"""
INSERT INTO {HourlyTimes._meta.db_table} (workspace_id, hour, reviewer, bucket, count)
SELECT %(workspace)s, date_trunc('hour', resolved_at, 'UTC'), reviewer, {BUCKET_SQL}, count(*)
FROM ({RESOLVED_SQL}) AS resolved
WHERE secs IS NOT NULL
GROUP BY 2, 3, 4
"""

_PERCENTILES_SQL = f"""
INSERT INTO {DailyPercentiles._meta.db_table} (workspace_id, day, everyone, reviewer, decisions, p50, p90)
SELECT %(workspace)s, (resolved_at AT TIME ZONE 'UTC')::date, GROUPING(reviewer) = 1, coalesce(reviewer, ''),
       count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY secs), percentile_cont(0.9) WITHIN GROUP (ORDER BY secs)
FROM ({RESOLVED_SQL}) AS resolved
WHERE secs IS NOT NULL
GROUP BY GROUPING SETS ((2, reviewer), (2))
"""

# A closed day's hours, summed: the page reads one row per key and day instead of 24.
_DAYS_SQL = f"""
INSERT INTO {DayRollup._meta.db_table}
    (workspace_id, day, outcome, config_id, rule_id, reviewer, count, fast, failed, seconds)
SELECT workspace_id, (hour AT TIME ZONE 'UTC')::date, outcome, config_id, rule_id, reviewer,
       sum(count), sum(fast), sum(failed), sum(seconds)
FROM {HourlyRollup._meta.db_table}
WHERE workspace_id = %(workspace)s AND hour >= %(start)s AND hour < %(end)s
GROUP BY 1, 2, 3, 4, 5, 6
"""

# After a recount of failures: the closed days it touched, brought into line with their hours.
_DAY_FAILURES_SQL = f"""
UPDATE {DayRollup._meta.db_table} AS d SET failed = h.failed
FROM (
    SELECT (hour AT TIME ZONE 'UTC')::date AS day, outcome, config_id, rule_id, reviewer, sum(failed) AS failed
    FROM {HourlyRollup._meta.db_table}
    WHERE workspace_id = %(workspace)s AND outcome = 'approved' AND hour >= %(start)s AND hour < %(end)s
    GROUP BY 1, 2, 3, 4, 5
) AS h
WHERE d.workspace_id = %(workspace)s AND d.day >= %(start)s::date AND d.outcome = 'approved' AND d.day = h.day
  AND d.config_id = h.config_id AND d.rule_id = h.rule_id AND d.reviewer = h.reviewer AND d.failed <> h.failed
"""

# The failures the engines reported since: each closed hour of the last day, recounted.
_FAILURES_SQL = f"""
UPDATE {HourlyRollup._meta.db_table} AS h SET failed = f.failed
FROM (
    SELECT date_trunc('hour', decided_at, 'UTC') AS hour, config_id, {RULE_KEY_SQL} AS rule_id,
           decided_by_email AS reviewer, count(*) FILTER (WHERE execution_status = 'failed') AS failed
    FROM {TABLE}
    WHERE workspace_id = %(workspace)s AND status IN ('approved', 'rejected', 'expired')
      AND decided_at >= %(start)s AND decided_at < %(end)s AND status = 'approved'
    GROUP BY 1, 2, 3, 4
) AS f
WHERE h.workspace_id = %(workspace)s AND h.hour >= %(start)s AND h.outcome = 'approved' AND h.hour = f.hour
  AND h.config_id = f.config_id AND h.rule_id = f.rule_id AND h.reviewer = f.reviewer AND h.failed <> f.failed
"""


def lifetime() -> timedelta:
    """The longest a request waits: it resolves at most this long after it was registered."""
    return timedelta(seconds=settings.APPROVAL_TTL_SECONDS)


def midnight(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def window_start(now: datetime) -> datetime:
    """The first hour the insights page shows: midnight of the first of its WINDOW_DAYS UTC days."""
    return midnight(now.astimezone(UTC).date() - timedelta(days=WINDOW_DAYS - 1))


def closed_until(now: datetime) -> datetime:
    """Every hour before this one is closed: over, and over for at least GRACE."""
    return (now - GRACE).astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def resolved_params(*, workspace_id: int, start: datetime, end: datetime) -> dict:
    return {"workspace": workspace_id, "start": start, "end": end}


def bucket_of(seconds: float) -> int:
    """The histogram bucket of a time to decision (BUCKET_SQL in Python)."""
    if seconds < BUCKET_FLOOR:
        return 0
    return 1 + math.floor(math.log(seconds / BUCKET_FLOOR) / math.log(BUCKET_RATIO))


def bucket_value(bucket: int) -> float:
    """What a bucket's times are read as: its geometric middle (within ±2.5 % of each), or 0.05 s."""
    if bucket == 0:
        return BUCKET_FLOOR / 2
    return BUCKET_FLOOR * BUCKET_RATIO ** (bucket - 0.5)


def histogram_percentile(histogram: dict[int, int], fraction: float) -> float | None:
    """percentile_cont over a histogram, each time read as its bucket's value (bucket_value)."""
    total = sum(histogram.values())
    if not total:
        return None
    rank = fraction * (total - 1)
    low, high = math.floor(rank), math.ceil(rank)
    values, seen = {}, 0
    for bucket in sorted(histogram):
        count = histogram[bucket]
        for wanted in (low, high):
            if seen <= wanted < seen + count:
                values[wanted] = bucket_value(bucket)
        seen += count
    return values[low] + (values[high] - values[low]) * (rank - low)


def roll_up(*, workspace_id: int, now: datetime) -> datetime:
    """Roll up every closed hour of the page's window not yet rolled up; returns the mark (idempotent).

    Hours before the window are never read, so a workspace seen for the first time (or after a
    month unseen) starts at the window. A closed day's exact percentiles are computed when its
    last hour is rolled up.
    """
    closed, first = closed_until(now), window_start(now)
    mark = RollupMark.objects.filter(workspace_id=workspace_id).values_list("rolled_up_to", flat=True).first()
    if mark is not None and mark >= closed:
        return mark
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {RollupMark._meta.db_table} (workspace_id, rolled_up_to) VALUES (%s, %s) "
            "ON CONFLICT (workspace_id) DO NOTHING",
            [workspace_id, first],
        )
        cursor.execute(
            f"SELECT rolled_up_to FROM {RollupMark._meta.db_table} WHERE workspace_id = %s FOR UPDATE", [workspace_id]
        )
        start = max(cursor.fetchone()[0], first)
        if start >= closed:
            return start
        params = resolved_params(workspace_id=workspace_id, start=start, end=closed)
        cursor.execute(_HOURS_SQL, params)
        cursor.execute(_TIMES_SQL, params)
        # The days whose last hour is in [start, closed): they close now (start >= first keeps them in
        # the window). Their percentiles are taken over the whole day, hours rolled up earlier included.
        days_from = start.astimezone(UTC).date()
        days_to = closed.date()  # exclusive: the day `closed` falls in is still open
        if days_from < days_to:
            days = resolved_params(workspace_id=workspace_id, start=midnight(days_from), end=midnight(days_to))
            cursor.execute(_PERCENTILES_SQL, days)
            cursor.execute(_DAYS_SQL, days)
        recount_from = max(first, closed - FAILURE_HORIZON)
        cursor.execute(_FAILURES_SQL, resolved_params(workspace_id=workspace_id, start=recount_from, end=closed))
        # The closed days among the recounted hours (the day of recount_from up to the open day).
        recounted_days = midnight(recount_from.astimezone(UTC).date())
        if recounted_days < midnight(days_to):
            cursor.execute(
                _DAY_FAILURES_SQL,
                resolved_params(workspace_id=workspace_id, start=recounted_days, end=midnight(days_to)),
            )
        cursor.execute(
            f"UPDATE {RollupMark._meta.db_table} SET rolled_up_to = %s WHERE workspace_id = %s", [closed, workspace_id]
        )
    return closed


def forget_before(*, workspace_id: int, before: datetime) -> None:
    """Drop the rollups older than the window (nothing reads them)."""
    HourlyRollup.objects.filter(workspace_id=workspace_id, hour__lt=before).delete()
    DayRollup.objects.filter(workspace_id=workspace_id, day__lt=before.date()).delete()
    HourlyTimes.objects.filter(workspace_id=workspace_id, hour__lt=before).delete()
    DailyPercentiles.objects.filter(workspace_id=workspace_id, day__lt=before.date()).delete()
