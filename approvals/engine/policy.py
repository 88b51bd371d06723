"""What a frozen rule's condition and mode make of a registration, before anything is stored (API.md, "Policy").

A gate rule whose condition is false lets the call through: nothing is stored but a per-rule daily
count. A shadow rule never pauses: it counts the calls it would have asked about. A condition that
cannot be evaluated fails closed: the request is stored pending and its card says why.
"""

import datetime

from approvals.models import ApprovalRequest
from rules.conditions import ConditionFailed, condition_holds, condition_of, variables_of
from rules.counts import rule_count_add
from rules.models import RuleCount
from rules.vocabulary import RuleMode

ALLOWED = "allowed"
SHADOW = "shadow"


def allowed_notice(rule_id: str, *, shadow: bool) -> str:
    if shadow:
        return f"HITL: allowed — rule {rule_id} is in shadow mode: the call is counted, never paused; it may proceed"
    return f"HITL: allowed — rule {rule_id}'s condition does not hold for this call; it may proceed"


def registration_policy(*, version, rule: dict, approval: ApprovalRequest, now: datetime.datetime) -> str:
    """ALLOWED or SHADOW when the call goes through unstored (counted here), "" to store the request.

    A request stored because its condition failed carries the error in `approval.condition_error`.
    """
    try:
        condition = condition_of(version, rule)
        asks = condition is None or condition_holds(condition, variables_for(approval, now=now))
        error = ""
    except ConditionFailed as failure:
        asks, error = True, str(failure)
    if rule.get("mode") == RuleMode.SHADOW:
        if asks:  # a shadow rule whose condition fails would have asked: it asks when it cannot tell
            rule_count_add(config_pk=version.config_id, rule_id=rule["id"], kind=RuleCount.SHADOW, now=now)
        return SHADOW
    if not asks:
        rule_count_add(config_pk=version.config_id, rule_id=rule["id"], kind=RuleCount.ALLOWED, now=now)
        return ALLOWED
    approval.condition_error = error[:500]
    return ""


def variables_for(approval: ApprovalRequest, *, now: datetime.datetime) -> dict:
    return variables_of(
        target=approval.target,
        operation=approval.operation,
        caller=approval.caller,
        requested_by=approval.requested_by,
        run_id=approval.run_id,
        arguments=approval.arguments,
        now=now,
    )
