from django.db import models

from workspaces.models import Workspace


class Grain(models.IntegerChoices):
    """PostgreSQL's GROUPING(day, outcome, reviewer) bitmask of the grouping set a row sums."""

    FULL = 0, "day, outcome, config, rule, reviewer"
    REVIEWER_DAY = 2, "day, reviewer"
    DAY = 3, "day"
    REVIEWER = 6, "reviewer (the open days only)"
    ALL = 7, "everything (the open days only)"


class DailyRollup(models.Model):
    """The insights of one closed day of requests, computed once by SQL (selectors.py).

    A day's requests are final two days later: a request lives at most 24 hours, and decided
    requests never change (a trigger refuses it). So a closed day is aggregated once and the
    insights page reads a few hundred rows however many million requests lie behind them.
    """

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()  # the UTC day the requests were registered
    grain = models.PositiveSmallIntegerField(choices=Grain.choices)
    outcome = models.CharField(max_length=16, blank=True)  # approved / rejected / expired ("" above FULL)
    config_id = models.BigIntegerField(null=True)
    rule_id = models.CharField(max_length=24, blank=True)
    reviewer = models.CharField(max_length=254, blank=True)
    count = models.PositiveIntegerField()
    fast = models.PositiveIntegerField()  # decided in under 5 seconds
    failed = models.PositiveIntegerField()  # approved, and the engine reported the call failed
    seconds = models.FloatField()  # summed time to decision (people's decisions only)
    p50 = models.FloatField(null=True)
    p90 = models.FloatField(null=True)

    class Meta:
        indexes = [models.Index(fields=["workspace", "day"], name="rollup_day")]


class RolledUpDay(models.Model):
    """Which closed days are in DailyRollup (a day without requests has no rows there)."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "day"], name="rolled_up_once")]
