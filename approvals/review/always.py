""" "Approve always" from a card: the approving reviewer proposes a condition that would have let this call through.

The proposal is checked before the decision (so a refused one decides nothing) and recorded after
an approval that counted; it lands in the draft as a proposed change (rules/proposals.py), never live.
"""

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError

from approvals.engine.policy import variables_for
from approvals.models import ApprovalRequest, Status
from rules.models import ConditionProposal, Rule
from rules.proposals import FIELD, proposal_check, proposal_create, suggested_condition
from rules.versions import frozen_versions


def _frozen_condition(approval: ApprovalRequest, versions: dict | None = None) -> str:
    key = (approval.config_id, approval.config_version)
    version = versions.get(key) if versions is not None else frozen_versions.get(*key)
    rule = version.rule(approval.rule_id) if version is not None else None
    return (rule or {}).get("condition", "")


def always_suggestion(approval: ApprovalRequest, *, versions: dict | None = None) -> str:
    """What the card's "Approve always" box starts with (`versions`: a page's, read at once by frozen_versions.many)."""
    return suggested_condition(
        current=_frozen_condition(approval, versions),
        target=approval.target,
        operation=approval.operation,
        caller=approval.caller,
    )


def always_check(*, approval: ApprovalRequest, decision: str, condition: str) -> Rule:
    """The draft rule to propose on; ValidationError naming propose_condition when this proposal cannot be made."""
    if decision != "approve" or approval.is_token_cap or not approval.rule_id:
        raise ValidationError({FIELD: "Approve always goes with approving a gate request (decision approve)."})
    return proposal_check(
        config=approval.config,
        rule_id=approval.rule_id,
        condition=condition,
        variables=variables_for(approval, now=approval.created_at),
    )


def always_record(
    *, approval: ApprovalRequest, rule: Rule, condition: str, user: AbstractBaseUser, already: bool
) -> ConditionProposal | None:
    """After the decision: the proposal, if this reviewer's approval counted (decided it, or a new vote)."""
    if already or approval.status not in (Status.APPROVED, Status.PENDING):
        return None
    return proposal_create(
        rule=rule,
        condition=condition,
        condition_before=_frozen_condition(approval),
        approval_public_id=approval.public_id,
        user=user,
    )
