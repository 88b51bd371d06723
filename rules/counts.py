"""Per rule and day counts of what a registration let through without storing (RuleDayCount): writes and reads."""

import datetime

from django.db import connection
from django.db.models import Q, Sum
from django.utils import timezone

from .models import RuleCount, RuleDayCount

# One statement, autocommit: the day's row is created or counted up; two racing registrations both count.
_UPSERT = (
    f"INSERT INTO {RuleDayCount._meta.db_table} (config_id, rule_id, day, kind, count) VALUES (%s, %s, %s, %s, 1) "
    "ON CONFLICT (config_id, rule_id, day, kind) DO UPDATE SET count = "
    f"{RuleDayCount._meta.db_table}.count + 1"
)


def rule_count_add(*, config_pk: int, rule_id: str, kind: str, now: datetime.datetime) -> None:
    """Count one registration under the rule on today's (UTC) row."""
    day = now.astimezone(datetime.UTC).date()
    with connection.cursor() as cursor:
        cursor.execute(_UPSERT, [config_pk, rule_id, day, kind])


def since_day(days: int, *, now: datetime.datetime | None = None) -> datetime.date:
    """The first (UTC) day of the last `days` days, today included."""
    today = (now or timezone.now()).astimezone(datetime.UTC).date()
    return today - datetime.timedelta(days=days - 1)


def rule_counts(*, config_pk: int, kind: str, days: int, now: datetime.datetime | None = None) -> dict[str, int]:
    """rule id → how many registrations of `kind` it counted in the last `days` days."""
    rows = (
        RuleDayCount.objects.filter(config_id=config_pk, kind=kind, day__gte=since_day(days, now=now))
        .values("rule_id")
        .annotate(total=Sum("count"))
    )
    return {row["rule_id"]: row["total"] for row in rows}


def workspace_rule_counts(*, workspace_id: int, days: int) -> list[dict]:
    """Per config and rule, the last `days` days' shadow and condition counts, largest first (insights)."""
    rows = (
        RuleDayCount.objects.filter(config__workspace_id=workspace_id, day__gte=since_day(days))
        .values("config__name", "config__public_id", "rule_id")
        .annotate(
            shadow=Sum("count", filter=Q(kind=RuleCount.SHADOW)),
            allowed=Sum("count", filter=Q(kind=RuleCount.ALLOWED)),
        )
    )
    out = [
        {
            "config": row["config__name"],
            "config_id": row["config__public_id"],
            "rule_id": row["rule_id"],
            "shadow": row["shadow"] or 0,
            "allowed": row["allowed"] or 0,
        }
        for row in rows
    ]
    return sorted(out, key=lambda row: -(row["shadow"] + row["allowed"]))[:50]
