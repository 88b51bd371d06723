from django.db import models

from workspaces.models import Workspace


class HourlyRollup(models.Model):
    """The requests that resolved in one closed UTC hour, summed by outcome, config, rule and reviewer.

    Keyed by the hour a request *resolved* (decided, or reached its deadline), not the hour it was
    registered: a resolution never changes afterwards (the decide service refuses a request past its
    deadline, and a trigger refuses changing a decided one), so an hour is final as soon as it has
    passed and only the current hour is aggregated live (insights/rollup.py).
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    hour = models.DateTimeField()  # the start of the UTC hour the requests resolved in
    outcome = models.CharField(max_length=16)  # approved / rejected / expired
    config_id = models.BigIntegerField()
    rule_id = models.CharField(max_length=24, blank=True)
    reviewer = models.CharField(max_length=254, blank=True)  # "" for an expiry
    count = models.PositiveIntegerField()
    fast = models.PositiveIntegerField()  # decided in under 5 seconds
    failed = models.PositiveIntegerField()  # approved, and the engine reported the call failed
    seconds = models.FloatField()  # summed time to decision (people's decisions only)

    class Meta:
        indexes = [models.Index(fields=["workspace", "hour"], name="rollup_hour")]


class DayRollup(models.Model):
    """A closed UTC day's HourlyRollup rows summed (when its last hour is rolled up): the page reads
    30 days as ≤ 29 days of these and today's hours, not 720 hours of rows."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()
    outcome = models.CharField(max_length=16)
    config_id = models.BigIntegerField()
    rule_id = models.CharField(max_length=24, blank=True)
    reviewer = models.CharField(max_length=254, blank=True)
    count = models.PositiveIntegerField()
    fast = models.PositiveIntegerField()
    failed = models.PositiveIntegerField()
    seconds = models.FloatField()

    class Meta:
        indexes = [models.Index(fields=["workspace", "day"], name="dayrollup_day")]


class HourlyTimes(models.Model):
    """A histogram of one closed hour's times to decision, per reviewer, in fixed logarithmic buckets.

    Percentiles cannot be merged from per-hour percentiles; bucket counts can. Bucket b > 0 holds
    [0.1 s × 1.05^(b−1), 0.1 s × 1.05^b), bucket 0 anything under 0.1 s (rollup.bucket_of), so a
    percentile read from it is within ±2.5 % of the exact one. Used only for the days not yet
    closed (DailyPercentiles has the exact figures of the others).
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    hour = models.DateTimeField()
    reviewer = models.CharField(max_length=254, blank=True)
    bucket = models.PositiveSmallIntegerField()
    count = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["workspace", "hour"], name="times_hour")]


class DailyPercentiles(models.Model):
    """Exact time-to-decision p50 / p90 (percentile_cont) of one closed UTC day, computed once when it closes."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()
    everyone = models.BooleanField()  # true: the workspace's; false: `reviewer`'s own
    reviewer = models.CharField(max_length=254, blank=True)
    decisions = models.PositiveIntegerField()
    p50 = models.FloatField()
    p90 = models.FloatField()

    class Meta:
        indexes = [models.Index(fields=["workspace", "day"], name="percentiles_day")]


class RollupMark(models.Model):
    """How far a workspace's hours are rolled up: every hour before `rolled_up_to` is in the tables above.

    Rolling up locks this row and moves it forward, in the transaction that writes the rows, so
    a second roll-up of the same hours (the schedule and a page view at once) finds nothing to do.
    """

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, related_name="+", primary_key=True)
    rolled_up_to = models.DateTimeField()
