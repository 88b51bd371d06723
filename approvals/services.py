"""Writes on approval requests. The database, not Python, decides who wins a race."""

import functools
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import DateField, DateTimeField, F, Field
from django.utils import timezone

from contacts.models import Delivery, DeliveryEvent
from contacts.outbox import deliveries_for_registration, deliveries_for_resolution, kick_sender
from rules.exceptions import ConfigNotFound
from rules.models import Config, ConfigVersion, PassInformationLevel
from workspaces.models import ApiToken, Workspace

from .digest import call_digest
from .exceptions import IdempotencyKeyReused, NotApproved, WrongDecision
from .models import EXPIRED_REASON, Action, ApprovalKind, ApprovalRequest, Scope, Status
from .notify import CHANNEL, notify_changed, notify_changed_many

# decision word → (the kind it decides, resulting status, the action the engine takes)
DECISIONS: dict[str, tuple[str, str, str]] = {
    "approve": (ApprovalKind.GATE, Status.APPROVED, Action.RESUME),
    "reject": (ApprovalKind.GATE, Status.REJECTED, Action.HALT),
    "proceed": (ApprovalKind.TOKEN_CAP, Status.APPROVED, Action.PROCEED_PAST_CAP),
    "stop": (ApprovalKind.TOKEN_CAP, Status.REJECTED, Action.STOP_RUN),
}


def approval_decide(
    *, approval: ApprovalRequest, user, decision: str, reason: str = ""
) -> tuple[ApprovalRequest, bool]:
    """Record a decision once. Returns the request as it now is, and whether it was already decided.

    A conditional UPDATE on (status = pending, not yet expired) is the arbiter: of two reviewers
    deciding at the same instant exactly one updates the row; the other gets the first decision.
    """
    if decision not in DECISIONS:
        raise WrongDecision(f"decision must be one of {', '.join(DECISIONS)}")
    kind, status, action = DECISIONS[decision]
    if approval.kind != kind:
        pair = "approve or reject" if approval.kind == ApprovalKind.GATE else "proceed or stop"
        raise WrongDecision(f"A {approval.get_kind_display().lower()} request is decided with {pair}, not {decision}")
    now = timezone.now()
    with transaction.atomic():
        won = ApprovalRequest.objects.filter(pk=approval.pk, status=Status.PENDING, expires_at__gt=now).update(
            status=status,
            decision_action=action,
            decided_at=now,
            decided_by=user,
            decided_by_email=getattr(user, "email", "") or "",
            reason=reason,
        )
        if won:
            notify_changed(approval.public_id)
            # Every way a request resolves tells its contacts, in the deciding transaction.
            deliveries_for_resolution(approvals=[approval], event=DeliveryEvent.DECIDED)
    if not won:
        approval_expire_if_overdue(approval=approval)
    approval.refresh_from_db()
    return approval, not won


def approval_expire_if_overdue(*, approval: ApprovalRequest) -> ApprovalRequest:
    """Persist the expiry of an overdue request (a read already sees it expired, this makes it so)."""
    if approval.status == Status.PENDING and approval.is_overdue():
        expire_requests(ApprovalRequest.objects.filter(pk=approval.pk))
        approval.refresh_from_db()
    return approval


def expire_requests(queryset) -> int:
    """Mark the overdue pending requests of `queryset` expired; returns how many were."""
    now = timezone.now()
    with transaction.atomic():
        overdue = queryset.filter(status=Status.PENDING, expires_at__lte=now)
        public_ids = list(overdue.values_list("public_id", flat=True))
        if not public_ids:
            return 0
        count = ApprovalRequest.objects.filter(
            public_id__in=public_ids, status=Status.PENDING, expires_at__lte=now
        ).update(status=Status.EXPIRED, decided_at=F("expires_at"), reason=EXPIRED_REASON, decision_action="")
        notify_changed_many(public_ids)
        expired = ApprovalRequest.objects.filter(public_id__in=public_ids, status=Status.EXPIRED).only(*_RESOLVED)
        deliveries_for_resolution(approvals=list(expired), event=DeliveryEvent.EXPIRED)
    return count


# What deliveries_for_resolution reads of a resolved request.
_RESOLVED = ("id", "workspace_id", "rule_id", "config_id", "config_version")


def approval_sweep_overdue(*, batch_size: int = 1000) -> int:
    """Mark one batch of overdue pending requests expired; returns how many. Safe in several workers.

    `FOR UPDATE SKIP LOCKED` lets concurrent sweeps split the work instead of queueing on each
    other, and skips a row a reviewer is deciding right now; the UPDATE re-checks `pending`, so a
    decided row is never overwritten.
    """
    now = timezone.now()
    if connection.vendor == "postgresql":
        return _sweep_batch_postgres(now=now, batch_size=batch_size)
    with transaction.atomic():
        claimed = list(
            ApprovalRequest.objects.overdue(now).order_by("expires_at").values_list("pk", flat=True)[:batch_size]
        )
        count = ApprovalRequest.objects.filter(pk__in=claimed, status=Status.PENDING).update(
            status=Status.EXPIRED, decided_at=F("expires_at"), reason=EXPIRED_REASON, decision_action=""
        )
        expired = ApprovalRequest.objects.filter(pk__in=claimed, status=Status.EXPIRED).only(*_RESOLVED)
        deliveries_for_resolution(approvals=list(expired), event=DeliveryEvent.EXPIRED)
        return count


# One statement per batch — claim, expire and notify — costing one round trip: within 2x of a
# bare UPDATE of the same rows (bench/). It returns what the outbox needs, so the `expired`
# deliveries are written in the same transaction.
_SWEEP_SQL = f"""
WITH claimed AS (
    SELECT id FROM {ApprovalRequest._meta.db_table}
    WHERE status = %(pending)s AND expires_at <= %(now)s
    ORDER BY expires_at
    LIMIT %(batch)s
    FOR UPDATE SKIP LOCKED
), swept AS (
    UPDATE {ApprovalRequest._meta.db_table} AS apr
    SET status = %(expired)s, decided_at = apr.expires_at, reason = %(reason)s, decision_action = ''
    FROM claimed
    WHERE apr.id = claimed.id AND apr.status = %(pending)s
    RETURNING apr.id, apr.public_id, apr.workspace_id, apr.rule_id, apr.config_id, apr.config_version
)
SELECT id, workspace_id, rule_id, config_id, config_version, pg_notify(%(channel)s, public_id) FROM swept
"""


def _sweep_batch_postgres(*, now, batch_size: int) -> int:
    params = {
        "pending": Status.PENDING,
        "expired": Status.EXPIRED,
        "now": now,
        "batch": batch_size,
        "reason": EXPIRED_REASON,
        "channel": CHANNEL,
    }
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_SWEEP_SQL, params)
        rows = cursor.fetchall()
        swept = [ApprovalRequest(**dict(zip(_RESOLVED, row[:5], strict=True))) for row in rows]
        deliveries_for_resolution(approvals=swept, event=DeliveryEvent.EXPIRED)
    return len(rows)


# --- Engines: registration and outcome (API.md, Engines) ---------------------------------------

INERT_NOTICE = "HITL: inert (Free plan or no enabled rules) — the call may proceed"


@dataclass(frozen=True)
class Registration:
    """What a registration did: `approval` is None when HITL is inert and nothing was stored."""

    approval: ApprovalRequest | None
    created: bool


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
    scope: str = "",
    tokens_used: int | None = None,
    token_cap: int | None = None,
    idempotency_key: str = "",
    fingerprint: str = "",
) -> Registration:
    """Register a gate (rule_id, target, operation, summary, arguments) or a token cap breach (scope,
    tokens_used, token_cap) against the frozen version `config_id`@`config_version`.

    Idempotent per (engine key, Idempotency-Key): a replay returns the first request, another body
    with the same key is refused. Two identical registrations racing are decided by the unique
    constraint, never by a check-then-insert: the loser's INSERT fails and it returns the winner.
    """
    version = _frozen_version(workspace_id=workspace.pk, config_id=config_id, number=config_version)
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
        approval.target = target
        approval.operation = operation
        approval.summary = summary
        approval.arguments = arguments
        approval.call_digest = call_digest(target=target, operation=operation, arguments=arguments)
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
    deliveries = deliveries_for_registration(approval=approval, rule=rule, version=version) if kind == "gate" else []
    try:
        if connection.in_atomic_block or (deliveries and connection.vendor != "postgresql"):
            with transaction.atomic():  # a savepoint, so a refused INSERT leaves the caller's transaction usable
                _insert(approval, deliveries=deliveries)
        else:
            _insert(approval, deliveries=deliveries)  # autocommit: one statement, no BEGIN/COMMIT round trips
    except IntegrityError as error:
        if idempotency_key and _refused_by(error) == IDEMPOTENCY_CONSTRAINT:
            first = _idempotent_replay(engine_key=engine_key, idempotency_key=idempotency_key, fingerprint=fingerprint)
            if first is not None:
                return Registration(approval=first, created=False)
        if _refused_by(error) == FOREIGN_KEY:
            # The config was deleted since its version was cached.
            _frozen_version.cache_clear()
            raise ConfigNotFound(f"No config {config_id} in this workspace.") from None
        raise
    if deliveries:
        kick_sender()
    return Registration(approval=approval, created=True)


IDEMPOTENCY_CONSTRAINT = "one_request_per_idempotency_key"
FOREIGN_KEY = "foreign key"


def _refused_by(error: IntegrityError) -> str:
    """Which constraint refused a new request: its name, FOREIGN_KEY, or "" for anything else.

    PostgreSQL names the constraint; SQLite names only the columns of a unique one.
    """
    cause = error.__cause__
    diag = getattr(cause, "diag", None)
    if diag is not None:
        if type(cause).__name__ == "ForeignKeyViolation":
            return FOREIGN_KEY
        return diag.constraint_name or ""
    message = str(error)
    if message == "FOREIGN KEY constraint failed":
        return FOREIGN_KEY
    table = ApprovalRequest._meta.db_table
    for constraint in ApprovalRequest._meta.constraints:
        columns = (ApprovalRequest._meta.get_field(name).column for name in constraint.fields)
        if message == "UNIQUE constraint failed: " + ", ".join(f"{table}.{column}" for column in columns):
            return constraint.name
    return ""


# The INSERT the ORM would send for a new request, written once: on the registration hot path,
# compiling it per request cost more than PostgreSQL took to run it (bench/).
_INSERT_FIELDS = [field for field in ApprovalRequest._meta.concrete_fields if not field.primary_key]
_INSERT_SQL = "INSERT INTO {table} ({columns}) VALUES ({values}) RETURNING id".format(
    table=ApprovalRequest._meta.db_table,
    columns=", ".join(f'"{field.column}"' for field in _INSERT_FIELDS),
    values=", ".join(["%s"] * len(_INSERT_FIELDS)),
)


def _check_insert_fields() -> None:
    """At import: the INSERT writes every concrete column, each from the instance as it stands.

    It skips save() and so each field's pre_save(): a field whose value the ORM computes at save
    time (auto_now, a database default, a generated column, its own pre_save) would be stored
    wrong. Such a field must go through the ORM, so the process refuses to start instead.
    """
    written = {field.column for field in _INSERT_FIELDS}
    model = {field.column for field in ApprovalRequest._meta.concrete_fields if not field.primary_key}
    if written != model:
        raise ImproperlyConfigured(f"_insert writes {sorted(written ^ model)} unlike the model; fix _INSERT_FIELDS")
    plain_pre_save = (Field.pre_save, DateField.pre_save, DateTimeField.pre_save)
    for field in _INSERT_FIELDS:
        computed = getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        if computed or field.generated or field.has_db_default() or type(field).pre_save not in plain_pre_save:
            raise ImproperlyConfigured(
                f"ApprovalRequest.{field.name} is computed at save time; the hand-written INSERT cannot store it"
            )


_check_insert_fields()

# Strings, integers, ids and aware datetimes go to psycopg as they are; JSON needs its adapter.
_NEEDS_PREPARING = [
    (index, field) for index, field in enumerate(_INSERT_FIELDS) if field.get_internal_type() == "JSONField"
]


def _insert(approval: ApprovalRequest, *, deliveries: list[Delivery] = ()) -> None:
    """INSERT the request, and its outbox rows in the same statement (a CTE): atomic in autocommit."""
    if connection.vendor != "postgresql":
        approval.save(force_insert=True)
        for delivery in deliveries:
            delivery.approval = approval
        Delivery.objects.bulk_create(deliveries)
        return
    approval.ensure_public_id()
    values = approval.__dict__
    params = [values[field.attname] for field in _INSERT_FIELDS]
    for index, field in _NEEDS_PREPARING:
        params[index] = field.get_db_prep_save(params[index], connection)
    sql = _INSERT_SQL
    if deliveries:
        sql = _WITH_DELIVERIES_SQL.format(values=", ".join([_DELIVERY_ROW] * len(deliveries)))
        for delivery in deliveries:
            params += [
                field.get_db_prep_save(getattr(delivery, field.attname), connection) for field in _DELIVERY_FIELDS
            ]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        approval.pk = cursor.fetchone()[0]
    approval._state.adding = False
    approval._state.db = connection.alias


# The request's INSERT as a CTE feeding its deliveries' INSERT: one round trip, no BEGIN/COMMIT.
_DELIVERY_FIELDS = [
    field for field in Delivery._meta.concrete_fields if not field.primary_key and field.name != "approval"
]
_DELIVERY_ROW = "(" + ", ".join(f"%s::{field.db_type(connection)}" for field in _DELIVERY_FIELDS) + ")"
_WITH_DELIVERIES_SQL = (
    f"WITH apr AS ({_INSERT_SQL}) "
    f'INSERT INTO {Delivery._meta.db_table} ("approval_id", '
    + ", ".join(f'"{field.column}"' for field in _DELIVERY_FIELDS)
    + ") SELECT apr.id, v.* FROM apr, (VALUES {values}) AS v RETURNING (SELECT id FROM apr)"
)


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
# lru_cache keeps no exception: a version published later is found then.
@functools.lru_cache(maxsize=1024)
def _frozen_version(*, workspace_id: int, config_id: str, number: int) -> ConfigVersion:
    version = (
        ConfigVersion.objects.select_related("config")
        .filter(config__workspace_id=workspace_id, config__public_id=config_id, number=number)
        .first()
    )
    if version is not None:
        return version
    if not Config.objects.filter(workspace_id=workspace_id, public_id=config_id).exists():
        raise ConfigNotFound(f"No config {config_id} in this workspace.")
    raise ConfigNotFound(f"Config {config_id} has no version {number}: register against a published version it serves.")


def approval_report_outcome(
    *, approval: ApprovalRequest, status: str, execution_id: str = "", detail: str = ""
) -> tuple[ApprovalRequest, bool]:
    """Record what happened to an approved call, once. Returns the request and whether it was already reported.

    Like a decision, the first report stands: the conditional UPDATE (approved, no outcome yet)
    lets exactly one report through; a later one gets the first back, unchanged.
    """
    approval_expire_if_overdue(approval=approval)
    reported = ApprovalRequest.objects.filter(pk=approval.pk, status=Status.APPROVED, execution_status="").update(
        execution_status=status, execution_id=execution_id, execution_detail=detail, executed_at=timezone.now()
    )
    approval.refresh_from_db(from_queryset=ApprovalRequest.objects.select_related("config"))
    if not reported and approval.status != Status.APPROVED:
        raise NotApproved(
            f"{approval.public_id} is {approval.status}, not approved: an outcome is reported only for an "
            "approved call, which must not run otherwise."
        )
    return approval, not reported
