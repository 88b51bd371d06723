"""Shapes of the engine API (docs/api.md, Engines and Limits): registration, outcome, the served gate table."""

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import validate_email
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from approvals.edits.checks import FINITE, arguments_schema_check_problem, arguments_schema_problem, json_value_problem
from approvals.models import ApprovalKind, ExecutionStatus, Scope
from approvals.presenters.api import ApprovalRequestSerializer, QuestionSerializer
from approvals.questions.validate import PLAN_MAX, TITLE_MAX
from common.fields import FieldsBoundOnce, StrictCharField, StrictIntegerField
from common.query import QuerySerializer
from rules.serializers import ServedGateSerializer, TokenCapsSerializer
from rules.vocabulary import PassInformationLevel

# Token counts are stored in a bigint; beyond it the database would refuse, so we refuse first.
MAX_TOKENS = 2**63 - 1
MAX_INT = 2_147_483_647


@extend_schema_field({"type": "string", "format": "email", "maxLength": 254})
class EmailText(StrictCharField):
    """An email address (checked by the serializer's validate_<field>), as the schema states it."""


def text(
    name: str,
    max_length: int,
    *,
    required: bool = True,
    allow_blank: bool = False,
    field: type[StrictCharField] = StrictCharField,
) -> StrictCharField:
    """A string field whose limit message names the field and the limit (docs/api.md, Limits)."""
    return field(
        max_length=max_length,
        required=required,
        allow_blank=allow_blank,
        trim_whitespace=False,
        error_messages={
            "max_length": f"{name} is at most {max_length:,} characters; send a shorter one.",
            "blank": f"{name} must not be empty.",
            "required": f"{name} is required.",
        },
    )


def choice(name: str, choices: list[tuple[str, str]], **kwargs: Any) -> serializers.ChoiceField:
    values = ", ".join(value for value, _ in choices)
    return serializers.ChoiceField(
        choices=choices,
        error_messages={
            "invalid_choice": f'{name} "{{input}}" is not one of: {values}.',
            "required": f"{name} is required (one of: {values}).",
        },
        **kwargs,
    )


class KindSerializer(FieldsBoundOnce):
    """Read first, to pick the serializer for the rest of the body."""

    kind = choice("kind", ApprovalKind.choices)


class _RegistrationBase(FieldsBoundOnce):
    config_id = text("config_id", 24)
    config_version = StrictIntegerField(min_value=1, max_value=MAX_INT)
    run_id = text("run_id", 500)
    thread_id = text("thread_id", 500, allow_blank=True)
    caller = text("caller", 500)
    ttl_seconds = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=settings.APPROVAL_TTL_SECONDS,
        error_messages={
            "min_value": "ttl_seconds must be a positive number of seconds.",
            # Refused rather than clamped: an engine that asked for longer must not believe it got it.
            "max_value": (
                f"ttl_seconds may shorten the 24-hour lifetime, never lengthen it: "
                f"send at most {settings.APPROVAL_TTL_SECONDS} (or leave it out)."
            ),
        },
        help_text="Shorten the request's 24-hour lifetime (1–86400). Longer is refused, not clamped.",
    )
    requested_by = text("requested_by", 254, required=False, allow_blank=True, field=EmailText)

    def validate_requested_by(self, value: str) -> str:
        """The email of the person the run acts for: four eyes keeps them from approving it."""
        if value:
            try:
                validate_email(value)
            except DjangoValidationError:
                raise serializers.ValidationError(
                    "requested_by must be the email of the person the run acts for, such as ana@example.com."
                ) from None
        return value


class GateRegistrationSerializer(_RegistrationBase):
    """A gated call. Boundary, point and message come from the frozen rule, never from here."""

    kind = choice("kind", [(ApprovalKind.GATE.value, ApprovalKind.GATE.label)])
    rule_id = text("rule_id", 24)
    target = text("target", 500)
    operation = text("operation", 500)
    summary = text("summary", 2000, required=False, allow_blank=True)
    arguments = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="Any JSON value, at most 64 KiB encoded; needs level full.",
        error_messages={"invalid": FINITE},
    )

    arguments_schema = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="A JSON Schema (draft 2020-12, at most 16 KiB) of the arguments: a reviewer's edits "
        "(rules with allow_edit) are checked against it.",
        error_messages={"invalid": "arguments_schema must be JSON with finite numbers only."},
    )

    def validate_arguments(self, value: object) -> object:
        # What PostgreSQL's jsonb and the digest cannot take is refused here, never met as a 500 later.
        problem = json_value_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value

    def validate(self, data: dict) -> dict:
        problem = arguments_schema_check_problem(data.get("arguments_schema"), data.get("arguments"))
        if problem:
            raise serializers.ValidationError({"arguments_schema": problem})
        return data

    def validate_arguments_schema(self, value: object) -> object:
        if value is None:
            return None
        problem = arguments_schema_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class TokenCapRegistrationSerializer(_RegistrationBase):
    """A token cap breach: parks the run as a "Token cap reached" card."""

    kind = choice("kind", [(ApprovalKind.TOKEN_CAP.value, ApprovalKind.TOKEN_CAP.label)])
    scope = choice("scope", Scope.choices)
    # At least 1 because token_cap is: the part of "tokens_used >= token_cap" a schema can state.
    tokens_used = StrictIntegerField(
        min_value=1,
        max_value=MAX_TOKENS,
        help_text="Tokens used so far; a breach reaches its cap, so at least token_cap (below it is a 400).",
    )
    token_cap = StrictIntegerField(min_value=1, max_value=MAX_TOKENS, help_text="The cap that was reached.")

    def validate(self, data: dict) -> dict:
        if data["tokens_used"] < data["token_cap"]:
            raise serializers.ValidationError(
                {"tokens_used": "tokens_used is below token_cap: report a breach only once the cap is reached."}
            )
        return data


@extend_schema_field(QuestionSerializer(many=True))
class QuestionsInputField(serializers.JSONField):
    """The questions as JSON; their shape is the registration service's to check (it names the field)."""

    def to_internal_value(self, data: Any) -> Any:
        # As parsed from the JSON body, and every value is checked by questions_validate: DRF's own check
        # (dumping the value to JSON again to see that it can be) would find nothing.
        return data


class QuestionRegistrationSerializer(_RegistrationBase):
    """A run asks people 1–8 questions (docs/questions.md), whatever rule gates it.

    The questions' shape is checked by the registration service (approvals.questions.validate), which
    names the field at fault (`questions.0.options`); the schema describes it here.
    """

    kind = choice("kind", [(ApprovalKind.QUESTION.value, ApprovalKind.QUESTION.label)])
    title = text("title", TITLE_MAX)
    questions = QuestionsInputField(help_text="1–8 questions; ids unique, at most 64 characters")


class PlanRegistrationSerializer(_RegistrationBase):
    """A run shows people a plan (Markdown) to approve or send back with what to change."""

    kind = choice("kind", [(ApprovalKind.PLAN.value, ApprovalKind.PLAN.label)])
    title = text("title", TITLE_MAX)
    plan = text("plan", PLAN_MAX)


class InertSerializer(serializers.Serializer):
    """The answer when HITL is inert: nothing was stored, the call may proceed."""

    status = serializers.ChoiceField(choices=["inert"])
    notice = serializers.CharField()


class AllowedSerializer(serializers.Serializer):
    """The answer when the rule lets the call through unstored: its condition is false, or it is a shadow rule."""

    status = serializers.ChoiceField(choices=["allowed"])
    notice = serializers.CharField()
    shadow = serializers.BooleanField(help_text="true: a shadow rule counted the call; false: its condition is false")


class OutcomeSerializer(serializers.Serializer):
    status = choice(
        "status",
        ExecutionStatus.choices,
        help_text="started: the engine is about to run the approved call (recorded before it runs); executed or "
        "failed: what happened (a reviewer records only these, on an in-doubt request)",
    )
    execution_id = text("execution_id", 255, required=False, allow_blank=True)
    detail = text("detail", 2000, required=False, allow_blank=True)
    call_digest = serializers.RegexField(
        r"^[0-9a-f]{64}$",
        required=False,
        help_text="the call_digest of what ran (hex SHA-256, computed as the request's call_digest is); one that "
        "is not decision.call_digest is recorded as execution.digest_matches false",
        error_messages={"invalid": "call_digest must be a hex SHA-256 (64 characters 0-9a-f) of what ran."},
    )


class OutcomeReportedSerializer(ApprovalRequestSerializer):
    """The request after an outcome report; `already_reported` mirrors a decision's `already_decided`."""

    already_reported = serializers.BooleanField()


class HitlStateSerializer(serializers.Serializer):
    state = serializers.ChoiceField(choices=["active", "inert"])
    log_line = serializers.CharField()


class ServedConfigSerializer(serializers.Serializer):
    config_id = serializers.CharField()
    version = serializers.IntegerField()
    hitl = HitlStateSerializer()
    gates = ServedGateSerializer(
        many=True, help_text="The enabled rules of the served version, in order, each with its match_field."
    )
    token_caps = TokenCapsSerializer()
    pass_information_level = serializers.ChoiceField(choices=PassInformationLevel.choices)
    questions = serializers.BooleanField(help_text="whether a run may ask questions and show plans (HITL active)")


class WaitQuerySerializer(QuerySerializer):
    wait = serializers.FloatField(
        required=False,
        min_value=0,
        max_value=settings.APPROVAL_MAX_WAIT_SECONDS,
        error_messages={
            "invalid": f"wait must be a number of seconds from 0 to {settings.APPROVAL_MAX_WAIT_SECONDS}.",
            "min_value": f"wait must be a number of seconds from 0 to {settings.APPROVAL_MAX_WAIT_SECONDS}.",
            "max_value": f"wait must be a number of seconds from 0 to {settings.APPROVAL_MAX_WAIT_SECONDS}.",
        },
    )

    def validate_wait(self, value: float) -> float:
        if value != value or value in (float("inf"), float("-inf")):  # NaN and infinities parse as floats
            raise serializers.ValidationError(
                f"wait must be a number of seconds from 0 to {settings.APPROVAL_MAX_WAIT_SECONDS}."
            )
        return value
