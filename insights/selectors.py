"""The insights page's numbers: SQL aggregates over rollups, a fixed number of queries.

The page reads the rollups of closed hours (rollup.py) and aggregates live only
the requests resolved since (the current hour), so its cost follows an hour's traffic, not the
history's size. Requests are counted in the UTC day they resolved (decided, or reached their
deadline). Each closed day's p50 / p90 are exact (percentile_cont, stored when the day closed);
the days still open (today, and yesterday for its first minutes) and the "last 2 days" tile are
read from histograms of decision times and are within ±2.5 % — the page marks them "≈".

tests/insights/direct.py computes the same figures from the requests themselves, exactly; the
tests hold the two together.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from django.db import connection
from django.db.models import Count, Min
from django.utils import timezone

from approvals.models import ApprovalRequest, Status
from rules.models import Config, Rule
from rules.vocabulary import ANY
from workspaces.models import Workspace

from . import rollup
from .models import DailyPercentiles, DayRollup, HourlyRollup, HourlyTimes
from .rollup import RUBBER_STAMP_SECONDS, WINDOW_DAYS, histogram_percentile, midnight

__all__ = ["RUBBER_STAMP_SECONDS", "WINDOW_DAYS", "Insights", "insights_for"]

# "undeliverable": expired because nobody could be reached (approvals/expiry/undeliverable.py), told apart.
OUTCOMES = ("approved", "rejected", "expired", "undeliverable")
ROW_FIELDS = ("day", "outcome", "config_id", "rule_id", "reviewer", "count", "fast", "failed", "seconds")
PENDING_COUNTED = 1000


@dataclass
class Facts:
    """What the page is drawn from, however it was computed."""

    rows: list[dict]  # ROW_FIELDS: counts by day, outcome, config, rule and reviewer
    percentiles: dict[date, tuple[float, float]]  # time to decision p50, p90 of each day with decisions
    recent: tuple[float | None, float | None]  # p50, p90 over yesterday and today
    approximate: set[date] = field(default_factory=set)  # days whose percentiles came from histograms
    recent_approximate: bool = False


# --- Rollups of closed hours + the current hour live ---------------------------------------------

# The closed days (before the mark's day) from DayRollup, the open day's closed hours from HourlyRollup.
_ROLLED_UP_SQL = f"""
SELECT day, outcome, config_id, rule_id, reviewer, sum(count), sum(fast), sum(failed), sum(seconds)
FROM (
    SELECT day, outcome, config_id, rule_id, reviewer, count, fast, failed, seconds
    FROM {DayRollup._meta.db_table}
    WHERE workspace_id = %(workspace)s AND day >= %(first)s::date AND day < %(open)s::date
    UNION ALL
    SELECT (hour AT TIME ZONE 'UTC')::date, outcome, config_id, rule_id, reviewer, count, fast, failed, seconds
    FROM {HourlyRollup._meta.db_table}
    WHERE workspace_id = %(workspace)s AND hour >= %(open)s AND hour < %(mark)s
) AS rolled_up
WHERE %(reviewer)s::text IS NULL OR reviewer = %(reviewer)s::text
GROUP BY 1, 2, 3, 4, 5
"""

# The requests resolved since the mark, grouped finely enough to give both the rows and the histogram.
_LIVE_SQL = f"""
SELECT (resolved_at AT TIME ZONE 'UTC')::date, outcome, config_id, rule_id, reviewer,
       count(*), count(*) FILTER (WHERE secs < {RUBBER_STAMP_SECONDS}), count(*) FILTER (WHERE failed),
       coalesce(sum(secs), 0), CASE WHEN secs IS NOT NULL THEN {rollup.BUCKET_SQL} END
FROM ({rollup.RESOLVED_SQL}) AS resolved
WHERE %(reviewer)s::text IS NULL OR reviewer = %(reviewer)s::text
GROUP BY 1, 2, 3, 4, 5, 10
"""

_TIMES_SQL = f"""
SELECT (hour AT TIME ZONE 'UTC')::date, bucket, sum(count)
FROM {HourlyTimes._meta.db_table}
WHERE workspace_id = %(workspace)s AND hour >= %(from)s AND hour < %(mark)s
  AND (%(reviewer)s::text IS NULL OR reviewer = %(reviewer)s::text)
GROUP BY 1, 2
"""


def facts_for(*, workspace_id: int, reviewer: str | None, now: datetime) -> Facts:
    mark = rollup.roll_up(workspace_id=workspace_id, now=now)
    first = rollup.window_start(now)
    yesterday = now.astimezone(UTC).date() - timedelta(days=1)
    rows: list[dict] = []
    histograms: dict[date, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    with connection.cursor() as cursor:
        # Every day before the mark's is closed, and in DayRollup (rollup.roll_up).
        open_from = midnight(mark.astimezone(UTC).date())
        params = {"workspace": workspace_id, "first": first, "open": open_from, "mark": mark, "reviewer": reviewer}
        cursor.execute(_ROLLED_UP_SQL, params)
        rows += [dict(zip(ROW_FIELDS, row, strict=True)) for row in cursor.fetchall()]
        live = rollup.resolved_params(workspace_id=workspace_id, start=mark, end=now)
        cursor.execute(_LIVE_SQL, {**live, "reviewer": reviewer})
        for *row, bucket in cursor.fetchall():
            rows.append(dict(zip(ROW_FIELDS, row, strict=True)))
            if bucket is not None:
                histograms[row[0]][bucket] += row[5]
        params = {"workspace": workspace_id, "from": midnight(yesterday), "mark": mark, "reviewer": reviewer}
        cursor.execute(_TIMES_SQL, params)
        for day, bucket, count in cursor.fetchall():
            histograms[day][bucket] += count
    exact = DailyPercentiles.objects.filter(workspace_id=workspace_id, day__gte=first.date())
    exact = exact.filter(everyone=True) if reviewer is None else exact.filter(everyone=False, reviewer=reviewer)
    percentiles = {day: (p50, p90) for day, p50, p90 in exact.values_list("day", "p50", "p90")}
    approximate = set()
    for day, histogram in histograms.items():
        if day not in percentiles:  # not closed yet: read from its histogram
            percentiles[day] = (histogram_percentile(histogram, 0.5), histogram_percentile(histogram, 0.9))
            approximate.add(day)
    recent: dict[int, int] = defaultdict(int)
    for histogram in histograms.values():
        for bucket, count in histogram.items():
            recent[bucket] += count
    return Facts(
        rows=rows,
        percentiles=percentiles,
        recent=(histogram_percentile(recent, 0.5), histogram_percentile(recent, 0.9)),
        approximate=approximate,
        recent_approximate=bool(recent),
    )


# --- The page ------------------------------------------------------------------------------------


@dataclass
class RuleFacts:
    """What a reviewer recognises a rule by: its boundary, which one it matches, its message."""

    id: str
    kind: str
    match: str
    message: str
    config: str = ""  # the config's name: two configs may hold rules that read alike


@dataclass
class Breakdown:
    """Counts by outcome for one config, rule or reviewer, with its rubber stamps and failures."""

    label: str
    counts: dict = field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    rule: "RuleFacts | None" = None  # a rule's row: what the rule is, not its id
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
    pending: int  # at most PENDING_COUNTED
    pending_more: bool  # more than PENDING_COUNTED are waiting
    oldest_pending_at: datetime | None
    per_day: dict  # day -> {outcome: count}
    p50_per_day: dict  # day -> seconds or None
    p90_per_day: dict
    approximate_days: set  # days whose p50 / p90 are read from histograms (±2.5 %)
    recent_p50: float | None  # yesterday and today
    recent_p90: float | None
    recent_approximate: bool
    totals: Breakdown
    by_config: list[Breakdown]
    by_rule: list[Breakdown]
    by_reviewer: list[Breakdown]


# "By rule" rows of what no rule asks for, keyed as insights/rollup.RULE_KEY_SQL keys them.
NOT_A_RULE = {"—": "Token caps", "question": "Questions", "plan": "Plans"}


def _rule_key(rule_id: str) -> str:
    return rule_id or "—"


def _name_rules(workspace: Workspace, by_rule: dict[str, Breakdown]) -> None:
    """Label each rule's row by what the rule is (kind and match; its message and config beside it), never by
    its id; a row of questions, plans or token caps by what it is. Rules that read alike (the same kind and
    match in two configs) are told apart by their config's name."""
    ids = [rule_id for rule_id in by_rule if rule_id not in NOT_A_RULE]
    rules = (
        Rule.objects.filter(config__workspace=workspace, public_id__in=ids)
        .select_related("config")
        .only("public_id", "kind", "match", "message", "config__name")
    )
    known = {rule.public_id: rule for rule in rules}
    for key, label in NOT_A_RULE.items():
        if key in by_rule:
            by_rule[key].label = label
    for rule_id in ids:
        rule = known.get(rule_id)
        if rule is None:  # deleted from the draft since: its versions keep it, the row keeps counting it
            by_rule[rule_id].label = "a rule since deleted"
            by_rule[rule_id].rule = RuleFacts(id=rule_id, kind="(deleted)", match="", message="")
            continue
        match = "any" if rule.match == ANY else rule.match
        by_rule[rule_id].label = f"{rule.get_kind_display()} · {match}"
        by_rule[rule_id].rule = RuleFacts(
            id=rule_id, kind=rule.get_kind_display(), match=match, message=rule.message, config=rule.config.name
        )
    labels = [breakdown.label for breakdown in by_rule.values()]
    for breakdown in by_rule.values():
        if breakdown.rule is not None and breakdown.rule.config and labels.count(breakdown.label) > 1:
            breakdown.label = f"{breakdown.label} ({breakdown.rule.config})"


def insights_for(*, workspace: Workspace, reviewer: str | None = None, now: datetime | None = None) -> Insights:
    """The last 30 days for the whole workspace, or one reviewer's own decisions (`reviewer` = their email)."""
    now = now or timezone.now()
    facts = facts_for(workspace_id=workspace.pk, reviewer=reviewer, now=now)
    first = rollup.window_start(now).date()
    days = [first + timedelta(days=n) for n in range(WINDOW_DAYS)]
    per_day = {day: dict.fromkeys(OUTCOMES, 0) for day in days}
    totals = Breakdown("All")
    groups: dict[str, dict] = {"config": {}, "rule": {}, "reviewer": {}}
    for row in facts.rows:
        if row["day"] not in per_day:
            continue  # resolved in the moment between two UTC days
        per_day[row["day"]][row["outcome"]] += row["count"]
        for breakdown in (
            totals,
            groups["config"].setdefault(row["config_id"], Breakdown(str(row["config_id"]))),
            groups["rule"].setdefault(_rule_key(row["rule_id"]), Breakdown(_rule_key(row["rule_id"]))),
            groups["reviewer"].setdefault(
                row["reviewer"] or "—", Breakdown(row["reviewer"] or "nobody (expired or undeliverable)")
            ),
        ):
            breakdown.counts[row["outcome"]] += row["count"]
            breakdown.fast += row["fast"]
            breakdown.failed += row["failed"]
            breakdown.seconds += row["seconds"]

    names = dict(Config.objects.filter(workspace=workspace).values_list("pk", "name"))
    for config_id, breakdown in groups["config"].items():
        breakdown.label = names.get(config_id, f"config {config_id}")
    _name_rules(workspace, groups["rule"])
    # A pending request past its deadline (not yet swept) is expired, not waiting. Counted up to
    # PENDING_COUNTED: an exact count of 100,000 waiting requests reads 100,000 index entries and
    # rows (docs/audit.md has what it cost), the rest of the page a few hundred rollup rows. The oldest is
    # the first entry of the queue's index (workspace, status, created_at).
    waiting = ApprovalRequest.objects.filter(workspace=workspace).pending(now)
    pending = waiting.values("pk")[: PENDING_COUNTED + 1].count()
    oldest = waiting.aggregate(oldest=Min("created_at"))["oldest"]

    def ranked(group: dict) -> list[Breakdown]:
        return sorted(group.values(), key=lambda b: (-b.total, b.label))[:12]

    return Insights(
        days=days,
        pending=min(pending, PENDING_COUNTED),
        pending_more=pending > PENDING_COUNTED,
        oldest_pending_at=oldest,
        per_day=per_day,
        p50_per_day={day: facts.percentiles.get(day, (None, None))[0] for day in days},
        p90_per_day={day: facts.percentiles.get(day, (None, None))[1] for day in days},
        approximate_days=facts.approximate,
        recent_p50=facts.recent[0],
        recent_p90=facts.recent[1],
        recent_approximate=facts.recent_approximate,
        totals=totals,
        by_config=ranked(groups["config"]),
        by_rule=ranked(groups["rule"]),
        by_reviewer=ranked(groups["reviewer"]),
    )


# --- Questions: answered per day, time to answer --------------------------------------------------


@dataclass
class QuestionFacts:
    answered_per_day: dict  # day -> questions answered that UTC day
    declined: int
    expired: int
    p50: float | None  # time to answer, over the window
    p90: float | None

    @property
    def answered(self) -> int:
        return sum(self.answered_per_day.values())


def _percentile(values: list[float], fraction: float) -> float | None:
    """percentile_cont's linear interpolation between the closest ranks, over sorted `values`."""
    if not values:
        return None
    rank = fraction * (len(values) - 1)
    low = int(rank)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (rank - low)


def questions_for(*, workspace: Workspace, reviewer: str | None = None, now: datetime | None = None) -> QuestionFacts:
    """The window's questions: how many were answered each day and how long an answer took (two queries).

    Questions are few beside gates, so their answers are read as they are (no rollups): the window's
    answered questions' two times, and a count of the others by status.
    """
    now = now or timezone.now()
    first = rollup.window_start(now)
    days = [first.date() + timedelta(days=n) for n in range(WINDOW_DAYS)]
    resolved = ApprovalRequest.objects.filter(
        workspace=workspace, kind="question", decided_at__gte=first, decided_at__lte=now
    )
    if reviewer is not None:
        resolved = resolved.filter(decided_by_email=reviewer)
    per_day = dict.fromkeys(days, 0)
    seconds = []
    for created, decided in resolved.filter(status=Status.ANSWERED).values_list("created_at", "decided_at"):
        day = decided.astimezone(UTC).date()
        if day in per_day:
            per_day[day] += 1
        seconds.append(max((decided - created).total_seconds(), 0))
    others = dict(
        resolved.filter(status__in=[Status.DECLINED, Status.EXPIRED])
        .values_list("status")
        .annotate(count=Count("pk"))
        .values_list("status", "count")
    )
    return QuestionFacts(
        answered_per_day=per_day,
        declined=others.get(Status.DECLINED, 0),
        expired=others.get(Status.EXPIRED, 0) if reviewer is None else 0,
        p50=_percentile(sorted(seconds), 0.5),
        p90=_percentile(sorted(seconds), 0.9),
    )
