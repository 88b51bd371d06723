"""Registering a request: an engine's gate, token cap breach, question or plan, against a frozen config version.

Idempotent per (engine key, Idempotency-Key); the statement itself is approvals.engine.insert's.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from approvals.engine.digest import call_digest
from approvals.engine.insert import insert_request
from approvals.engine.policy import registration_policy
from approvals.exceptions import IdempotencyKeyReused
from approvals.models import ApprovalKind, ApprovalRequest, Scope
from approvals.questions.validate import plan_validate, questions_validate, title_validate
from contacts.outbox import deliveries_for_registration, kick_sender, questions_rule
from rules.exceptions import ConfigNotFound
from rules.models import ConfigVersion
from rules.versions import frozen_versions
from rules.vocabulary import PassInformationLevel, match_field, rule_gates
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


@dataclass(frozen=True)
class Sent:
    """What an engine sent to register a request: the registration serializers' validated fields."""

    kind: str
    config_id: str
    config_version: int
    run_id: str
    thread_id: str
    caller: str
    ttl_seconds: int | None = None
    requested_by: str = ""
    # A gate: the rule it is registered under, and the call.
    rule_id: str = ""
    target: str = ""
    operation: str = ""
    summary: str = ""
    arguments: Any = None
    arguments_schema: Any = None
    # A token cap breach.
    scope: str = ""
    tokens_used: int | None = None
    token_cap: int | None = None
    # A question (title, questions) or a plan (title, plan).
    title: str = ""
    questions: Any = None
    plan: str = ""


@dataclass(frozen=True)
class Asking:
    """One registration under way: who sent what, against which frozen version, and the request it makes."""

    engine_key: ApiToken
    sent: Sent
    version: ConfigVersion
    approval: ApprovalRequest
    now: datetime
    idempotency_key: str
    fingerprint: str

    @property
    def label(self) -> str:
        return f"{self.version.config.public_id}@{self.version.number}"

    @property
    def hitl_active(self) -> bool:
        """HITL state as the engine was told it at serve time: a paid plan and an enabled rule."""
        return self.approval.workspace.hitl_available and bool(self.version.enabled_rules)

    def inert(self, notice: str = INERT_NOTICE) -> Registration:
        """Inert stores nothing; but a retry of a request stored before a downgrade still gets it back."""
        if self.idempotency_key:
            first = _idempotent_replay(
                engine_key=self.engine_key, idempotency_key=self.idempotency_key, fingerprint=self.fingerprint
            )
            if first is not None:
                return Registration(approval=first, created=False)
        return Registration(approval=None, created=False, notice=notice)


def register(
    *, workspace: Workspace, engine_key: ApiToken, sent: Sent, idempotency_key: str = "", fingerprint: str = ""
) -> Registration:
    """Register what an engine `sent` — a gate, a token cap breach, a question or a plan — against the
    frozen version `sent.config_id`@`sent.config_version`, each kind by its own function below.

    Idempotent per (engine key, Idempotency-Key): a replay returns the first request, another body
    with the same key is refused. Two identical registrations racing are decided by the unique
    constraint, never by a check-then-insert: the loser's INSERT fails and it returns the winner.
    """
    version = frozen_versions.named(workspace_id=workspace.pk, config_id=sent.config_id, number=sent.config_version)
    now = timezone.now()
    approval = ApprovalRequest(
        workspace=workspace,
        engine_key=engine_key,
        kind=sent.kind,
        config=version.config,
        config_version=version.number,
        run_id=sent.run_id,
        thread_id=sent.thread_id,
        caller=sent.caller,
        pass_information_level=version.pass_information_level,
        created_at=now,
        expires_at=now + timedelta(seconds=sent.ttl_seconds or settings.APPROVAL_TTL_SECONDS),
        idempotency_key=idempotency_key,
        request_fingerprint=fingerprint if idempotency_key else "",
        requested_by=sent.requested_by,
    )
    asking = Asking(engine_key, sent, version, approval, now, idempotency_key, fingerprint)
    told = KINDS[sent.kind](asking)
    if isinstance(told, Registration):  # answered without storing anything: inert, or allowed
        return told
    return _stored(asking, deliveries=told)


def _gate(asking: Asking) -> Registration | list:
    """A gated call, under its rule of the frozen version; the deliveries that tell its contacts."""
    sent, approval, level, label = asking.sent, asking.approval, asking.version.pass_information_level, asking.label
    if not asking.hitl_active:
        return asking.inert()
    rule = asking.version.rule(sent.rule_id)
    if rule is None:
        raise ValidationError(
            {"rule_id": f"Rule {sent.rule_id} is not in {label}: take rule ids from that version's gates."}
        )
    if not rule["enabled"]:
        raise ValidationError({"rule_id": f"Rule {sent.rule_id} is disabled in {label}: it gates nothing."})
    if not rule_gates(rule, target=sent.target, operation=sent.operation):
        field = match_field(rule["kind"])
        value = sent.operation if field == "operation" else sent.target
        raise ValidationError(
            {
                field: f"Rule {sent.rule_id} of {label} gates the {rule['kind']} {field} {rule['match']!r}, not "
                f"{value!r}: register a call under the rule that matches it (its `match` is compared with "
                f"the call's `{field}`, as the served gate's `match_field` says)."
            }
        )
    if sent.arguments is not None and level != PassInformationLevel.FULL:
        raise ValidationError(
            {
                "arguments": f"{label} has pass information level {level}: arguments are passed only at "
                "level full. Leave them out, or publish the config with level full."
            }
        )
    if sent.summary and level == PassInformationLevel.NONE:
        raise ValidationError(
            {
                "summary": f"{label} has pass information level none: a summary is passed only at level "
                "summary or full. Leave it out, or publish the config with a higher level."
            }
        )
    _frozen_rule_onto(approval, rule)
    approval.target, approval.operation, approval.summary = sent.target, sent.operation, sent.summary
    approval.arguments, approval.arguments_schema = sent.arguments, sent.arguments_schema
    approval.call_digest = call_digest(target=sent.target, operation=sent.operation, arguments=sent.arguments)
    allowed = registration_policy(version=asking.version, rule=rule, approval=approval, now=asking.now)
    if allowed:
        return Registration(approval=None, created=False, allowed=allowed, rule_id=rule["id"])
    return deliveries_for_registration(approval=approval, rule=rule, version=asking.version)


def _frozen_rule_onto(approval: ApprovalRequest, rule: dict) -> None:
    """A gate request carries what its frozen rule said, so nothing later reads the rule again."""
    approval.rule_id = rule["id"]
    approval.boundary = rule["kind"]
    approval.point = rule["point"]
    approval.message = rule["message"]
    approval.approvals_required = rule["approvals_required"]
    approval.self_approval = rule["self_approval"]
    approval.allow_run_grant = rule["allow_run_grant"]
    approval.require_passkey = rule["require_passkey"]
    approval.allow_edit = rule["allow_edit"]


def _token_cap(asking: Asking) -> Registration | list:
    """A token cap breach. It is not a rule, so it parks the run on any paid plan (on Free there is no
    queue to park in); nobody is told of it but the Approvals tab."""
    sent = asking.sent
    if not asking.approval.workspace.hitl_available:
        return asking.inert()
    if sent.scope == Scope.TURN and asking.version.token_caps.get("mode") == "stop":
        raise ValidationError(
            {"scope": f"{asking.label}'s per-turn token cap mode is stop: end the run, there is nobody to ask."}
        )
    asking.approval.scope, asking.approval.tokens_used, asking.approval.token_cap = (
        sent.scope,
        sent.tokens_used,
        sent.token_cap,
    )
    return []


def _question(asking: Asking) -> Registration | list:
    """Questions for a person, or (the same way) a plan to approve: whatever rule gates the run."""
    sent, approval = asking.sent, asking.approval
    approval.title = title_validate(sent.title)
    if sent.kind == ApprovalKind.QUESTION:
        approval.questions = questions_validate(sent.questions)
    else:
        approval.plan = plan_validate(sent.plan)
    if not asking.hitl_active:
        replay = asking.inert()
        return Registration(approval=replay.approval, created=False, notice=QUESTION_INERT_NOTICE)
    return deliveries_for_registration(approval=approval, rule=questions_rule(asking.version), version=asking.version)


KINDS = {
    ApprovalKind.GATE: _gate,
    ApprovalKind.TOKEN_CAP: _token_cap,
    ApprovalKind.QUESTION: _question,
    ApprovalKind.PLAN: _question,
}


def _stored(asking: Asking, *, deliveries: list) -> Registration:
    """Insert the request with its outbox rows (one statement), or return the first one an
    Idempotency-Key stored.

    Insert first and look for the first request only when the key's unique constraint refuses
    the row: a replay costs one more query, a new request none, and a race has one winner.
    """
    approval, engine_key, now = asking.approval, asking.engine_key, asking.now
    try:
        if connection.in_atomic_block:
            # A savepoint, so a refused INSERT leaves the caller's transaction usable.
            with transaction.atomic():
                insert_request(approval, engine_key=engine_key, deliveries=deliveries, now=now)
        else:
            insert_request(approval, engine_key=engine_key, deliveries=deliveries, now=now)  # autocommit: one statement
    except IntegrityError as error:
        if asking.idempotency_key and _refused_by(error) == IDEMPOTENCY_CONSTRAINT:
            first = _idempotent_replay(
                engine_key=engine_key, idempotency_key=asking.idempotency_key, fingerprint=asking.fingerprint
            )
            if first is not None:
                return Registration(approval=first, created=False)
        if _refused_by(error) == FOREIGN_KEY:
            # The config was deleted since its version was cached.
            frozen_versions.clear()
            raise ConfigNotFound(f"No config {asking.sent.config_id} in this workspace.") from None
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
