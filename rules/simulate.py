"""A dry run of a config's draft against the last N days (API.md, "Policy": `POST …/simulate`).

For each rule: of the requests stored under it, how many the draft's rule would still ask about
(`would_ask`) and how many no longer (`no_longer_asked`: the rule is gone, disabled, in shadow
mode, or its condition is false for them); and how many calls it would newly ask about
(`newly_asked`): those a shadow rule counted, once the draft makes it a gate, and those its
condition let through, once the draft's rule has no condition (asks about every call).

Built to answer within seconds on a million stored requests without slowing registration:

- one aggregate query over the requests (a plain SELECT: no row locks, so no INSERT waits on it),
  grouped by rule and by only the values each rule's draft condition reads — a rule without a
  condition is one count, one reading `caller` is one row per distinct caller;
- each draft condition is evaluated once per distinct combination of those values, not per request
  (`now` is the request's creation time to the minute);
- the calls no request was stored for come from the per rule and day counts (rules/counts.py).

Bounded by HITL_SIMULATE_TIMEOUT_SECONDS: the query's statement_timeout, and the evaluations' deadline.
"""

import datetime
import json
import time
from dataclasses import dataclass, field

from django.conf import settings
from django.db import OperationalError, connection, transaction
from django.utils import timezone

from common.exceptions import DomainError

from .conditions import ConditionFailed, ConditionInvalid, condition_compile, condition_holds
from .counts import rule_counts, since_day
from .models import Config, RuleCount
from .vocabulary import RuleMode

DAYS_MIN, DAYS_MAX = 1, 30
# What each variable is in the stored request (its SQL), for grouping.
_COLUMNS = {
    "target": "target",
    "operation": "operation",
    "caller": "caller",
    "requested_by": "requested_by",
    "run_id": "run_id",
    "arguments": "arguments",
    "now": "date_trunc('minute', created_at)",
}


class SimulationTooLarge(DomainError):
    """The dry run would take longer than HITL_SIMULATE_TIMEOUT_SECONDS."""

    field = "days"


@dataclass
class RuleOutcome:
    rule_id: str
    in_draft: bool = True
    would_ask: int = 0
    no_longer_asked: int = 0
    newly_asked: int = 0
    asked_before: int = 0  # requests stored under it in those days
    shadow: int = 0  # calls its shadow counts say it would have asked
    condition_error: str = ""  # the draft condition failed on some call (those count as asked: fail closed)
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "rule_id": self.rule_id,
            "in_draft": self.in_draft,
            "would_ask": self.would_ask,
            "no_longer_asked": self.no_longer_asked,
            "newly_asked": self.newly_asked,
            "asked_before": self.asked_before,
            "condition_error": self.condition_error or None,
        }


def _history_sql(reads: dict[str, list[str]]) -> tuple[str, list]:
    """One scan of the config's gate requests since a time, grouped by rule and the values each rule reads."""
    select, params = ["rule_id"], []
    for variable, column in _COLUMNS.items():
        select.append(f"CASE WHEN rule_id = ANY(%s::varchar[]) THEN {column} END")
        params.append(reads.get(variable, []))
    groups = ", ".join(str(n) for n in range(1, len(select) + 1))
    sql = (
        # approvals' table by name: rules is imported by approvals, never the other way round.
        f"SELECT {', '.join(select)}, count(*) FROM approvals_approvalrequest "
        "WHERE workspace_id = %s AND config_id = %s AND kind = 'gate' AND created_at >= %s "
        f"GROUP BY {groups}"
    )
    return sql, params


def config_simulate(*, config: Config, days: int, now: datetime.datetime | None = None) -> dict:
    """What the draft's rules would have done to the last `days` days (today included, UTC)."""
    # Long: one pass over the days' requests for every draft rule and condition, under one deadline.
    if not DAYS_MIN <= days <= DAYS_MAX:
        raise SimulationTooLarge(f"days is from {DAYS_MIN} to {DAYS_MAX}.")
    now = now or timezone.now()
    start = datetime.datetime.combine(since_day(days, now=now), datetime.time(), tzinfo=datetime.UTC)
    deadline = time.monotonic() + settings.HITL_SIMULATE_TIMEOUT_SECONDS
    draft = {rule.public_id: rule.frozen() for rule in config.rules.all()}
    outcomes = {rule_id: RuleOutcome(rule_id) for rule_id in draft}
    conditions, reads = {}, {}
    for rule_id, rule in draft.items():
        if rule["condition"].strip():
            try:
                conditions[rule_id] = condition_compile(rule["condition"])
            except ConditionInvalid as refusal:  # saved before a limit tightened: it fails closed, as it would live
                outcomes[rule_id].condition_error = refusal.message
                continue
            for variable in conditions[rule_id].reads:
                reads.setdefault(variable, []).append(rule_id)

    sql, params = _history_sql(reads)
    try:
        # Read only, and bounded: a plain SELECT takes no row lock, so registrations never wait on it.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION READ ONLY")
            cursor.execute("SELECT set_config('statement_timeout', %s, true)", [f"{deadline_ms(deadline)}ms"])
            cursor.execute(sql, [*params, config.workspace_id, config.pk, start])
            rows = cursor.fetchall()
    except OperationalError:
        raise SimulationTooLarge(_too_large(days)) from None

    for row in rows:
        rule_id, values, count = row[0], row[1:-1], row[-1]
        outcome = outcomes.get(rule_id)
        if outcome is None:
            outcome = outcomes[rule_id] = RuleOutcome(rule_id, in_draft=False)
        outcome.asked_before += count
        rule = draft.get(rule_id)
        if rule is None or not rule["enabled"] or rule["mode"] == RuleMode.SHADOW:
            outcome.no_longer_asked += count
            continue
        if time.monotonic() > deadline:
            raise SimulationTooLarge(_too_large(days))
        if _asks(outcome, conditions.get(rule_id), dict(zip(_COLUMNS, values, strict=True))):
            outcome.would_ask += count
        else:
            outcome.no_longer_asked += count

    shadows = rule_counts(config_pk=config.pk, kind=RuleCount.SHADOW, days=days, now=now)
    allowed = rule_counts(config_pk=config.pk, kind=RuleCount.ALLOWED, days=days, now=now)
    for rule_id, rule in draft.items():
        outcome = outcomes[rule_id]
        outcome.shadow = shadows.get(rule_id, 0)
        if not rule["enabled"] or rule["mode"] == RuleMode.SHADOW:
            continue
        outcome.newly_asked += outcome.shadow  # a shadow rule made a gate asks what it counted
        if rule_id not in conditions and not outcome.condition_error:
            outcome.newly_asked += allowed.get(rule_id, 0)  # no condition any more: it asks about every call

    listed = [outcomes[rule_id] for rule_id in draft] + [o for o in outcomes.values() if not o.in_draft]
    total = {key: sum(getattr(o, key) for o in listed) for key in ("would_ask", "no_longer_asked", "newly_asked")}
    return {
        "days": days,
        "since": start.isoformat().replace("+00:00", "Z"),
        "rules": [outcome.as_dict() for outcome in listed],
        "total": {**total, "asked_before": sum(o.asked_before for o in listed)},
    }


def _asks(outcome: RuleOutcome, condition, values: dict) -> bool:
    if outcome.condition_error:
        return True
    if condition is None:
        return True
    variables = dict(values)
    if isinstance(variables.get("arguments"), str):  # jsonb as text, depending on the driver's loaders
        variables["arguments"] = json.loads(variables["arguments"])
    for name in ("target", "operation", "caller", "requested_by", "run_id"):
        if variables.get(name) is None:
            variables[name] = ""
    try:
        return condition_holds(condition, variables)
    except ConditionFailed as failure:
        outcome.condition_error = outcome.condition_error or str(failure)
        return True  # fails closed, as it would at registration


def deadline_ms(deadline: float) -> int:
    return max(1, int((deadline - time.monotonic()) * 1000))


def _too_large(days: int) -> str:
    return (
        f"The dry run of {days} days would take longer than {settings.HITL_SIMULATE_TIMEOUT_SECONDS} seconds: "
        "try fewer days, or a condition that reads fewer distinct values (run_id and arguments vary the most)."
    )
