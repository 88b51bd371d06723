"""The approval request as docs/api.md returns it everywhere."""

import datetime

from django.utils import timezone
from rest_framework import serializers

from rules.models import PassInformationLevel

from .models import EXPIRED_REASON, Action, ApprovalKind, ApprovalRequest, ExecutionStatus, Scope, Status
from .receipts import receipt_of
from .selectors import approving_votes


class DecisionSerializer(serializers.Serializer):
    outcome = serializers.ChoiceField(choices=["approved", "rejected"])
    action = serializers.ChoiceField(choices=Action.choices)
    # A plain string: an address on a `.test` or internal domain must not fail a strict client's `format: email`.
    decided_by = serializers.CharField(allow_null=True, help_text="the decider's email, or null")
    decided_at = serializers.DateTimeField()
    reason = serializers.CharField(allow_blank=True)
    expired = serializers.BooleanField()
    grant_id = serializers.CharField(allow_null=True, help_text="the run grant (grt_…) that approved it, or null")


class ApprovingVoteSerializer(serializers.Serializer):
    by = serializers.EmailField(allow_null=True)
    at = serializers.DateTimeField()
    reason = serializers.CharField(allow_blank=True)


class ExecutionSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=ExecutionStatus.choices)
    execution_id = serializers.CharField(allow_null=True)
    detail = serializers.CharField(allow_blank=True)
    reported_at = serializers.DateTimeField()


class ApprovalRequestSerializer(serializers.Serializer):
    """Declared field by field for the OpenAPI schema; rendered by a plain function for speed."""

    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=ApprovalKind.choices)
    status = serializers.ChoiceField(choices=Status.choices)
    config_id = serializers.CharField()
    config_version = serializers.IntegerField()
    rule_id = serializers.CharField(allow_null=True)
    boundary = serializers.CharField(allow_null=True)
    point = serializers.CharField(allow_null=True)
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
    receipt = serializers.CharField(
        allow_null=True,
        help_text="a decided request's signed receipt: a compact JWS (EdDSA) checked against /.well-known/jwks.json",
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
        return {
            "outcome": "rejected",
            "action": approval.halt_action,
            "decided_by": None,
            "decided_at": _iso(approval.expires_at),
            "reason": EXPIRED_REASON,
            "expired": True,
            "grant_id": None,
        }
    return {
        "outcome": status,
        "action": approval.decision_action,
        "decided_by": approval.decided_by_email or None,
        "decided_at": _iso(approval.decided_at),
        "reason": approval.reason,
        "expired": False,
        "grant_id": approval.grant_id,
    }


def _execution(approval: ApprovalRequest) -> dict | None:
    if not approval.execution_status:
        return None
    return {
        "status": approval.execution_status,
        "execution_id": approval.execution_id or None,
        "detail": approval.execution_detail,
        "reported_at": _iso(approval.executed_at),
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
        "receipt": receipt_of(approval, decision, status=status),
    }
