""" "Approve always" proposals: a reviewer's condition lands in the draft as a proposed change an admin reviews.

Proposing checks the condition compiles and is false for the call just approved (it would have
let it through); nothing changes live. Accepting writes it into the draft rule (rule_update,
audited as rule.changed) for the next publish; dismissing drops it.
"""

import json

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import actor_of, audit_append

from .conditions import ConditionFailed, ConditionInvalid, condition_compile, condition_holds
from .exceptions import RuleNotFound
from .models import ConditionProposal, Config, ProposalStatus, Rule
from .services import rule_update

FIELD = "propose_condition"


def suggested_condition(*, current: str, target: str, operation: str, caller: str) -> str:
    """The condition an "Approve always" box starts with: the rule's own, except calls like this one."""
    parts = [f"caller == {json.dumps(caller)}", f"target == {json.dumps(target)}"]
    if operation:
        parts.append(f"operation == {json.dumps(operation)}")
    exception = f"!({' && '.join(parts)})"
    return f"({current.strip()}) && {exception}" if current.strip() else exception


def proposal_check(*, config: Config, rule_id: str, condition: str, variables: dict) -> Rule:
    """The draft rule the proposal is for; ValidationError naming propose_condition when it cannot be proposed."""
    rule = Rule.objects.filter(config=config, public_id=rule_id).first()
    if rule is None:
        raise ValidationError({FIELD: f"Rule {rule_id} is no longer in the draft of {config.public_id}."})
    try:
        compiled = condition_compile(condition)
    except ConditionInvalid as refusal:
        raise ValidationError({FIELD: refusal.message}) from None
    try:
        asks = condition_holds(compiled, variables)
    except ConditionFailed as failure:
        raise ValidationError({FIELD: f"On this call {failure}."}) from None
    if asks:
        raise ValidationError(
            {
                FIELD: "This condition is true for this call, so the rule would still ask about it: change it so it "
                "is false for calls like this one."
            }
        )
    return rule


@transaction.atomic
def proposal_create(
    *, rule: Rule, condition: str, condition_before: str, approval_public_id: str, user: AbstractBaseUser
) -> ConditionProposal:
    proposal = ConditionProposal.objects.create(
        config=rule.config,
        rule=rule,
        condition=condition,
        condition_before=condition_before,
        approval_public_id=approval_public_id,
        proposed_by=user,
        proposed_by_email=getattr(user, "email", "") or "",
    )
    audit_append(
        workspace_id=rule.config.workspace_id,
        actor=actor_of(user=user),
        action="rule.proposed",
        object=proposal.public_id,
        data={
            "config_id": rule.config.public_id,
            "rule_id": rule.public_id,
            "approval": approval_public_id,
            "condition": condition,
        },
    )
    return proposal


def proposal_for(*, config: Config, public_id: str) -> ConditionProposal:
    proposal = ConditionProposal.objects.select_related("rule").filter(config=config, public_id=public_id).first()
    if proposal is None:
        raise RuleNotFound(f"No proposal {public_id} in config {config.public_id}.")
    return proposal


@transaction.atomic
def proposal_resolve(*, proposal: ConditionProposal, user: AbstractBaseUser, accept: bool) -> ConditionProposal:
    """Accept into the draft (the rule's condition becomes the proposal's) or dismiss; an open one once."""
    proposal = ConditionProposal.objects.select_for_update().select_related("rule", "config").get(pk=proposal.pk)
    if proposal.status != ProposalStatus.OPEN:
        return proposal
    if accept:
        rule_update(rule=proposal.rule, user=user, condition=proposal.condition)
    proposal.status = ProposalStatus.ACCEPTED if accept else ProposalStatus.DISMISSED
    proposal.resolved_by_email = getattr(user, "email", "") or ""
    proposal.resolved_at = timezone.now()
    proposal.save(update_fields=["status", "resolved_by_email", "resolved_at"])
    if not accept:
        audit_append(
            workspace_id=proposal.config.workspace_id,
            actor=actor_of(user=user),
            action="rule.proposal_dismissed",
            object=proposal.public_id,
            data={"config_id": proposal.config.public_id, "rule_id": proposal.rule.public_id},
        )
    return proposal


def proposal_as_dict(proposal: ConditionProposal) -> dict:
    def iso(value):
        return value.isoformat().replace("+00:00", "Z") if value else None

    return {
        "id": proposal.public_id,
        "rule_id": proposal.rule.public_id,
        "condition": proposal.condition,
        "condition_before": proposal.condition_before,
        "approval_id": proposal.approval_public_id,
        "proposed_by": proposal.proposed_by_email,
        "created_at": iso(proposal.created_at),
        "status": proposal.status,
        "resolved_by": proposal.resolved_by_email or None,
        "resolved_at": iso(proposal.resolved_at),
    }
