"""Registering a request: an engine's gate or token cap breach, against a frozen config version.

Idempotent per (engine key, Idempotency-Key); the statement itself is approvals.engine.insert's.
"""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from approvals.engine.digest import call_digest
from approvals.engine.insert import insert_request
from approvals.engine.policy import registration_policy
from approvals.engine.versions import frozen_versions
from approvals.exceptions import IdempotencyKeyReused
from approvals.models import ApprovalKind, ApprovalRequest, Scope
from approvals.questions.validate import plan_validate, questions_validate, title_validate
from contacts.outbox import deliveries_for_registration, kick_sender, questions_rule
from rules.exceptions import ConfigNotFound
from rules.models import PassInformationLevel, match_field, rule_gates
from workspaces.models import ApiToken, Workspace

INERT_NOTICE = "HITL: inert (Free plan or no enabled rules) — the call may proceed"
# A question or plan asked while HITL is inert: nobody is there to answer, so the run must not wait.
QUESTION_INERT_NOTICE = (
    "HITL: inert (Free plan or no enabled rules) — nobody can answer this question; go on with your best assumption"
)


@dataclass(frozen=True)
class Registration:
    """What a registration did: `approval` is None when HITL is inert and nothing was stored."""

    approval: ApprovalRequest | None
    created: bool
    # approvals.engine.policy.ALLOWED or SHADOW when the rule let the call through unstored (its condition, its mode).
    allowed: str = ""
    rule_id: str = ""
    notice: str = INERT_NOTICE  # what an inert answer says (approval None)


def approval_register(
    *,
    workspace: Workspace,
    engine_key: ApiToken,
    kind: str,
    config_id: str,
    config_version: int,
    run_id: str,
    thread_id: str,
    caller: str,
    ttl_seconds: int | None = None,
    rule_id: str = "",
    target: str = "",
    operation: str = "",
    summary: str = "",
    arguments: Any = None,
    arguments_schema: Any = None,
    scope: str = "",
    tokens_used: int | None = None,
    token_cap: int | None = None,
    requested_by: str = "",
    idempotency_key: str = "",
    fingerprint: str = "",
    title: str = "",
    questions: Any = None,
    plan: str = "",
) -> Registration:
    """Register a gate (rule_id, target, operation, summary, arguments, arguments_schema) or a token cap breach
    (scope, tokens_used, token_cap), a question (title, questions) or a plan (title, plan) against the frozen
    version `config_id`@`config_version`.

    Idempotent per (engine key, Idempotency-Key): a replay returns the first request, another body
    with the same key is refused. Two identical registrations racing are decided by the unique
    constraint, never by a check-then-insert: the loser's INSERT fails and it returns the winner.
    """
    version = frozen_versions.named(workspace_id=workspace.pk, config_id=config_id, number=config_version)
    label = f"{version.config.public_id}@{version.number}"
    level = version.pass_information_level
    now = timezone.now()
    approval = ApprovalRequest(
        workspace=workspace,
        engine_key=engine_key,
        kind=kind,
        config=version.config,
        config_version=version.number,
        run_id=run_id,
        thread_id=thread_id,
        caller=caller,
        pass_information_level=level,
        created_at=now,
        expires_at=now + timedelta(seconds=ttl_seconds or settings.APPROVAL_TTL_SECONDS),
        idempotency_key=idempotency_key,
        request_fingerprint=fingerprint if idempotency_key else "",
        requested_by=requested_by,
    )

    if kind == ApprovalKind.GATE:
        # HITL state as the engine was told it at serve time: inert stores nothing.
        if not workspace.hitl_available or not version.enabled_rules:
            return _inert_or_replay(engine_key=engine_key, idempotency_key=idempotency_key, fingerprint=fingerprint)
        rule = version.rule(rule_id)
        if rule is None:
            raise ValidationError(
                {"rule_id": f"Rule {rule_id} is not in {label}: take rule ids from that version's gates."}
            )
        if not rule["enabled"]:
            raise ValidationError({"rule_id": f"Rule {rule_id} is disabled in {label}: it gates nothing."})
        if not rule_gates(rule, target=target, operation=operation):
            field = match_field(rule["kind"])
            value = operation if field == "operation" else target
            raise ValidationError(
                {
                    field: f"Rule {rule_id} of {label} gates the {rule['kind']} {field} {rule['match']!r}, not "
                    f"{value!r}: register a call under the rule that matches it (its `match` is compared with "
                    f"the call's `{field}`, as the served gate's `match_field` says)."
                }
            )
        if arguments is not None and level != PassInformationLevel.FULL:
            raise ValidationError(
                {
                    "arguments": f"{label} has pass information level {level}: arguments are passed only at "
                    "level full. Leave them out, or publish the config with level full."
                }
            )
        if summary and level == PassInformationLevel.NONE:
            raise ValidationError(
                {
                    "summary": f"{label} has pass information level none: a summary is passed only at level "
                    "summary or full. Leave it out, or publish the config with a higher level."
                }
            )
        approval.rule_id = rule["id"]
        approval.boundary = rule["kind"]
        approval.point = rule["point"]
        approval.message = rule["message"]
        approval.approvals_required = rule["approvals_required"]
        approval.self_approval = rule["self_approval"]
        approval.allow_run_grant = rule["allow_run_grant"]
        approval.require_passkey = rule["require_passkey"]
        approval.allow_edit = rule["allow_edit"]
        approval.target = target
        approval.operation = operation
        approval.summary = summary
        approval.arguments = arguments
        approval.arguments_schema = arguments_schema
        approval.call_digest = call_digest(target=target, operation=operation, arguments=arguments)
        allowed = registration_policy(version=version, rule=rule, approval=approval, now=now)
        if allowed:
            return Registration(approval=None, created=False, allowed=allowed, rule_id=rule["id"])
    elif approval.is_question:
        # Whatever rule gates the run; HITL inert (as the engine was told at serve time) stores nothing.
        approval.title = title_validate(title)
        if kind == ApprovalKind.QUESTION:
            approval.questions = questions_validate(questions)
        else:
            approval.plan = plan_validate(plan)
        if not workspace.hitl_available or not version.enabled_rules:
            replay = _inert_or_replay(engine_key=engine_key, idempotency_key=idempotency_key, fingerprint=fingerprint)
            return Registration(approval=replay.approval, created=False, notice=QUESTION_INERT_NOTICE)
        rule = questions_rule(version)
    else:
        # A token cap is not a rule, so it parks the run on any paid plan; on Free there is no queue to park in.
        if not workspace.hitl_available:
            return _inert_or_replay(engine_key=engine_key, idempotency_key=idempotency_key, fingerprint=fingerprint)
        if scope == Scope.TURN and version.token_caps.get("mode") == "stop":
            raise ValidationError(
                {"scope": f"{label}'s per-turn token cap mode is stop: end the run, there is nobody to ask."}
            )
        approval.scope = scope
        approval.tokens_used = tokens_used
        approval.token_cap = token_cap

    # Insert first and look for the first request only when the key's unique constraint refuses
    # the row: a replay costs one more query, a new request none, and a race has one winner.
    # The outbox rows are written with the request (one statement), or neither is.
    told = kind != ApprovalKind.TOKEN_CAP
    deliveries = deliveries_for_registration(approval=approval, rule=rule, version=version) if told else []
    try:
        if connection.in_atomic_block:
            # A savepoint, so a refused INSERT leaves the caller's transaction usable.
            with transaction.atomic():
                insert_request(approval, engine_key=engine_key, deliveries=deliveries, now=now)
        else:
            insert_request(approval, engine_key=engine_key, deliveries=deliveries, now=now)  # autocommit: one statement
    except IntegrityError as error:
        if idempotency_key and _refused_by(error) == IDEMPOTENCY_CONSTRAINT:
            first = _idempotent_replay(engine_key=engine_key, idempotency_key=idempotency_key, fingerprint=fingerprint)
            if first is not None:
                return Registration(approval=first, created=False)
        if _refused_by(error) == FOREIGN_KEY:
            # The config was deleted since its version was cached.
            frozen_versions.clear()
            raise ConfigNotFound(f"No config {config_id} in this workspace.") from None
        raise
    if deliveries:
        kick_sender()
    return Registration(approval=approval, created=True)


IDEMPOTENCY_CONSTRAINT = "one_request_per_idempotency_key"
FOREIGN_KEY = "foreign key"


def _refused_by(error: IntegrityError) -> str:
    """Which constraint refused a new request: its name, FOREIGN_KEY, or "" for anything else."""
    cause = error.__cause__
    if type(cause).__name__ == "ForeignKeyViolation":
        return FOREIGN_KEY
    diag = getattr(cause, "diag", None)
    return (diag.constraint_name or "") if diag is not None else ""


def _inert_or_replay(*, engine_key: ApiToken, idempotency_key: str, fingerprint: str) -> Registration:
    """Inert stores nothing; but a retry of a request stored before a downgrade still gets it back."""
    if idempotency_key:
        first = _idempotent_replay(engine_key=engine_key, idempotency_key=idempotency_key, fingerprint=fingerprint)
        if first is not None:
            return Registration(approval=first, created=False)
    return Registration(approval=None, created=False)


def _idempotent_replay(*, engine_key: ApiToken, idempotency_key: str, fingerprint: str) -> ApprovalRequest | None:
    first = (
        ApprovalRequest.objects.select_related("config")
        .filter(engine_key=engine_key, idempotency_key=idempotency_key)
        .first()
    )
    if first is not None and first.request_fingerprint != fingerprint:
        raise IdempotencyKeyReused(
            f"Idempotency-Key {idempotency_key!r} was first used for {first.public_id} with a different body. "
            "Send the same body to get that request back, or use a new key for a new request."
        )
    return first


# Published versions never change (a database trigger refuses it), so each process keeps the ones
# engines register against instead of reading the same row for every request. A miss raises, and
