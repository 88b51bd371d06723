"""The approval request as docs/api.md returns it everywhere."""

import datetime

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from approvals import extensions
from approvals.edits.checks import decision_arguments, decision_digest, digest_matches, was_edited
from approvals.models import (
    UNDELIVERABLE_REASON,
    Action,
    ApprovalKind,
    ApprovalRequest,
    ExecutionStatus,
    Scope,
    Status,
    expired_reason,
)
from approvals.receipts.signing import receipt_of
from approvals.review.selectors import approving_votes
from rules.vocabulary import PassInformationLevel, RuleKind, RulePoint
from workspaces.access import Actor


class OptionSerializer(serializers.Serializer):
    value = serializers.CharField()
    label = serializers.CharField(required=False, allow_blank=True)
    description = serializers.CharField(required=False, allow_blank=True)


class QuestionSerializer(serializers.Serializer):
    """One question a run asks (docs/questions.md); checked by approvals.questions.validate.questions_validate."""

    id = serializers.CharField(max_length=64, help_text="unique within the request")
    prompt = serializers.CharField()
    type = serializers.ChoiceField(choices=["choice", "text", "number", "boolean"])
    options = OptionSerializer(many=True, required=False, help_text="2–20, for choice")
    multi = serializers.BooleanField(required=False, help_text="choice: several options may be chosen")
    free_text = serializers.BooleanField(
        required=False, help_text="choice: also accept words of one's own (default true)"
    )
    recommended = serializers.IntegerField(
        required=False, allow_null=True, help_text="an option's index; never chosen for anyone on expiry"
    )
    min = serializers.FloatField(required=False, allow_null=True, help_text="number")
    max = serializers.FloatField(required=False, allow_null=True, help_text="number")
    required = serializers.BooleanField(required=False, help_text="default true")


@extend_schema_field(QuestionSerializer(many=True, allow_null=True))
class QuestionsField(serializers.JSONField):
    """A question's list as JSON (checked by the registration service), described in the schema."""


@extend_schema_field(
    {
        "type": "object",
        "nullable": True,
        "additionalProperties": {},
        "description": "question id → its answer: an option's value (a list for multi), words, a number or a boolean",
    }
)
class AnswersField(serializers.JSONField):
    pass


class DecisionSerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(
        choices=["approved", "rejected", "answered", "declined", "expired"],
        help_text="a gate or a plan: approved / rejected; a question: answered / declined, or expired",
    )
    action = serializers.ChoiceField(choices=Action.choices)
    # A plain string: an address on a `.test` or internal domain must not fail a strict client's `format: email`.
    decided_by = serializers.CharField(allow_null=True, help_text="the decider's email, or null")
    on_behalf_of = serializers.CharField(
        allow_null=True,
        help_text="when a delegate decided: the delegator's email, for whom the decider stood in; else null",
    )
    decided_at = serializers.DateTimeField()
    reason = serializers.CharField(allow_blank=True)
    expired = serializers.BooleanField()
    undeliverable = serializers.BooleanField(
        help_text="expired because no notification could be delivered and nobody opened it (never a person's rejection)"
    )
    grant_id = serializers.CharField(allow_null=True, help_text="the run grant (grt_…) that approved it, or null")
    arguments = serializers.JSONField(
        allow_null=True,
        help_text="the call decided on: what was approved, which the engine runs (the proposal's unless edited)",
    )
    call_digest = serializers.CharField(
        allow_null=True, help_text="that call's digest (computed as call_digest is); null for a token cap"
    )
    edited = serializers.BooleanField(help_text="true when a reviewer approved other arguments than proposed")
    answers = AnswersField(help_text="a question's answers; null otherwise")
    withdrawn = serializers.BooleanField(
        help_text="true when its requester (or its engine) withdrew it: the engine halts; nobody decided it"
    )


class ApprovingVoteSerializer(serializers.Serializer):
    by = serializers.EmailField(allow_null=True)
    on_behalf_of = serializers.CharField(allow_null=True, help_text="the delegator a delegate voted for, or null")
    at = serializers.DateTimeField()
    reason = serializers.CharField(allow_blank=True)


class ExecutionSerializer(serializers.Serializer):
    status = serializers.ChoiceField(
        choices=ExecutionStatus.choices,
        help_text="started (the engine is running it; never completed, the call is in doubt), executed or failed",
    )
    execution_id = serializers.CharField(allow_null=True)
    detail = serializers.CharField(allow_blank=True)
    reported_at = serializers.DateTimeField(help_text="when this status was recorded")
    call_digest = serializers.CharField(allow_null=True, help_text="the digest the engine reported running, or null")
    digest_matches = serializers.BooleanField(
        allow_null=True,
        help_text="whether the reported call_digest is decision.call_digest (null when none was reported)",
    )


class ApprovalRequestSerializer(serializers.Serializer):
    """Declared field by field for the OpenAPI schema; rendered by a plain function for speed."""

    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=ApprovalKind.choices)
    status = serializers.ChoiceField(choices=Status.choices)
    config_id = serializers.CharField()
    config_version = serializers.IntegerField()
    rule_id = serializers.CharField(allow_null=True)
    boundary = serializers.ChoiceField(
        choices=RuleKind.choices,
        allow_null=True,
        help_text="the frozen rule's kind; null for a token cap or a question",
    )
    point = serializers.ChoiceField(choices=RulePoint.choices, allow_null=True, help_text="null where boundary is")
    message = serializers.CharField(allow_blank=True)
    run_id = serializers.CharField()
    thread_id = serializers.CharField(allow_blank=True)
    caller = serializers.CharField(allow_blank=True)
    target = serializers.CharField(allow_blank=True)
    operation = serializers.CharField(allow_blank=True)
    pass_information_level = serializers.ChoiceField(choices=PassInformationLevel.choices)
    summary = serializers.CharField(allow_null=True)
    arguments = serializers.JSONField(allow_null=True)
    call_digest = serializers.CharField(allow_null=True)
    tokens_used = serializers.IntegerField(allow_null=True)
    token_cap = serializers.IntegerField(allow_null=True)
    scope = serializers.ChoiceField(choices=Scope.choices, allow_null=True)
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    decision = DecisionSerializer(allow_null=True)
    execution = ExecutionSerializer(allow_null=True)
    requested_by = serializers.EmailField(allow_null=True, help_text="the person the run acts for (four eyes)")
    approvals_required = serializers.IntegerField(help_text="distinct reviewers who must approve (from the rule)")
    approvals = ApprovingVoteSerializer(many=True, help_text="the approving votes so far, oldest first")
    condition_error = serializers.CharField(
        allow_null=True, help_text="why the rule's condition could not be evaluated (the request failed closed)"
    )
    allow_edit = serializers.BooleanField(
        help_text="whether a reviewer may approve it with edited arguments (the frozen rule's allow_edit)"
    )
    arguments_schema = serializers.JSONField(
        allow_null=True, help_text="the engine's JSON Schema of the arguments, which edits are checked against"
    )
    title = serializers.CharField(allow_null=True, help_text="a question's or a plan's title")
    questions = QuestionsField(help_text="a question's questions, as registered with their defaults")
    plan = serializers.CharField(allow_null=True, help_text="a plan's Markdown")
    receipt = serializers.CharField(
        allow_null=True,
        help_text="a decided request's signed receipt: a compact JWS (EdDSA) checked against /.well-known/jwks.json",
    )
    claimed_by = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="a person's read (this request, the list, a run's story): who said \"I'm on it\" (the claimant's "
        "email), or null; absent from an engine key's reads and from other answers",
    )

    def to_representation(self, instance: ApprovalRequest) -> dict:
        return approval_as_dict(instance)


def _iso(value) -> str | None:
    if value is None:
        return None
    return value.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z")


def _decision(approval: ApprovalRequest, now) -> dict | None:
    status = approval.effective_status(now)
    if status == Status.PENDING:
        return None
    if status == Status.EXPIRED:
        undeliverable = approval.undeliverable and approval.status == Status.EXPIRED
        return {
            # A question nobody answered was neither answered nor declined: it expired.
            "outcome": "expired" if approval.kind == ApprovalKind.QUESTION else "rejected",
            "action": approval.expired_action,
            "decided_by": None,
            "on_behalf_of": None,
            # An undeliverable request ended when it was found so, before its deadline.
            "decided_at": _iso(approval.decided_at if undeliverable else approval.expires_at),
            "reason": UNDELIVERABLE_REASON if undeliverable else expired_reason(approval.kind),
            "expired": True,
            "undeliverable": undeliverable,
            "grant_id": None,
            "arguments": decision_arguments(approval),
            "call_digest": decision_digest(approval),
            "edited": False,
            "answers": None,
            "withdrawn": False,
        }
    withdrawn = status == Status.WITHDRAWN
    return {
        # Withdrawn counts as rejected for every engine and client that reads the outcome: nothing runs.
        "outcome": Status.REJECTED if withdrawn else status,
        "action": approval.decision_action,
        "decided_by": approval.decided_by_email or None,
        "on_behalf_of": approval.on_behalf_of or None,
        "decided_at": _iso(approval.decided_at),
        "reason": approval.reason,
        "expired": False,
        "undeliverable": False,
        "grant_id": approval.grant_id,
        # The call decided on: what runs when approved (the proposal unless a reviewer edited it).
        "arguments": decision_arguments(approval),
        "call_digest": decision_digest(approval),
        "edited": was_edited(approval),
        "answers": approval.answers,
        "withdrawn": withdrawn,
    }


def _execution(approval: ApprovalRequest) -> dict | None:
    if not approval.execution_status:
        return None
    return {
        "status": approval.execution_status,
        "execution_id": approval.execution_id or None,
        "detail": approval.execution_detail,
        "reported_at": _iso(approval.executed_at),
        "call_digest": approval.execution_digest or None,
        "digest_matches": digest_matches(approval),
    }


def approval_as_dict(approval: ApprovalRequest, now: datetime.datetime | None = None) -> dict:
    """Needs `approval.config` loaded (select_related) to avoid a query per request."""
    now = now or timezone.now()
    decision = _decision(approval, now)
    execution = _execution(approval)
    status = approval.effective_status(now)
    return {
        "id": approval.public_id,
        "kind": approval.kind,
        "status": status,
        "config_id": approval.config.public_id,
        "config_version": approval.config_version,
        "rule_id": approval.rule_id or None,
        "boundary": approval.boundary or None,
        "point": approval.point or None,
        "message": approval.message,
        "run_id": approval.run_id,
        "thread_id": approval.thread_id,
        "caller": approval.caller,
        "target": approval.target,
        "operation": approval.operation,
        "pass_information_level": approval.pass_information_level,
        "summary": approval.summary or None,
        "arguments": approval.arguments,
        "call_digest": approval.call_digest or None,
        "tokens_used": approval.tokens_used,
        "token_cap": approval.token_cap,
        "scope": approval.scope or None,
        "created_at": _iso(approval.created_at),
        "expires_at": _iso(approval.expires_at),
        "decision": decision,
        "execution": execution,
        "requested_by": approval.requested_by or None,
        "approvals_required": approval.approvals_required,
        "approvals": [{**vote, "at": _iso(vote["at"])} for vote in approving_votes(approval, now)],
        "condition_error": approval.condition_error or None,
        "allow_edit": approval.allow_edit,
        "arguments_schema": approval.arguments_schema,
        "title": approval.title or None,
        "questions": approval.questions,
        "plan": approval.plan or None,
        "receipt": receipt_of(approval, decision, status=status),
    }


def approvals_read(
    approvals: list[ApprovalRequest], *, actor: Actor, now: datetime.datetime | None = None
) -> list[dict]:
    """Requests as `actor` reads them over the API: a person's read adds what the apps above add (`claimed_by`),
    read for the whole page at once; an engine key's read is `approval_as_dict`'s, with no query more."""
    now = now or timezone.now()
    extra = extensions.api_extra(approvals) if actor.user is not None else {}
    return [{**approval_as_dict(approval, now), **extra.get(approval.pk, {})} for approval in approvals]


def approval_read(approval: ApprovalRequest, *, actor: Actor) -> dict:
    return approvals_read([approval], actor=actor)[0]
