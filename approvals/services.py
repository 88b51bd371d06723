"""Writes on approval requests. The database, not Python, decides who wins a race."""

import functools
import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ImproperlyConfigured, ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, DateField, DateTimeField, F, Field, Max, OuterRef, QuerySet, Subquery
from django.utils import timezone

from audit.chain import canonical
from audit.models import AuditRecord
from audit.services import APPEND_CTE, SYSTEM, AuditEntry, actor_of, append_params, audit_append, audit_append_many
from audit.services import audit_enabled as _audit_enabled
from contacts.models import Delivery, DeliveryEvent
from contacts.outbox import (
    Resolved,
    deliveries_for_registration,
    deliveries_for_resolution,
    kick_sender,
    resolution_tells,
)
from hitl_portal.ids import new_public_id
from hitl_portal.listened import ListenedCache
from rules.exceptions import ConfigNotFound
from rules.models import Config, ConfigVersion, PassInformationLevel
from workspaces.models import ApiToken, Workspace

from .digest import call_digest
from .exceptions import (
    GrantNotAllowed,
    GrantTtlOutOfRange,
    IdempotencyKeyReused,
    NotApproved,
    SelfApproval,
    WrongDecision,
)
from .models import EXPIRED_REASON, Action, ApprovalKind, ApprovalRequest, Grant, Scope, Status, Vote
from .notify import CHANNEL, notify_changed_many
from .permissions import refuses_self_approval

# decision word → (the kind it decides, resulting status, the action the engine takes)
DECISIONS: dict[str, tuple[str, str, str]] = {
    "approve": (ApprovalKind.GATE, Status.APPROVED, Action.RESUME),
    "reject": (ApprovalKind.GATE, Status.REJECTED, Action.HALT),
    "proceed": (ApprovalKind.TOKEN_CAP, Status.APPROVED, Action.PROCEED_PAST_CAP),
    "stop": (ApprovalKind.TOKEN_CAP, Status.REJECTED, Action.STOP_RUN),
}


# Run grants: how long one lives (API.md, Reviewers).
GRANT_TTL_DEFAULT = 3600
GRANT_TTL_MIN = 60
GRANT_TTL_MAX = 8 * 3600


def approval_decide(
    *,
    approval: ApprovalRequest,
    user: AbstractBaseUser,
    decision: str,
    reason: str = "",
    grant_ttl_seconds: int | None = None,
) -> tuple[ApprovalRequest, bool]:
    """Decide, or vote on, a request. Returns it as it now is, and whether nothing changed.

    Nothing changed (`True`) when the request was already decided or expired (the first decision
    stands), or — the request still pending — when this reviewer had already voted on it.

    - One approval needed: a conditional UPDATE on (pending, not yet expired) is the arbiter; of two
      reviewers deciding at once exactly one updates the row, the other gets the first decision.
    - A quorum (approvals_required N > 1): `approve` records a Vote; the N-th flips the request (see
      _approval_vote). One `reject` decides it rejected, through the same conditional UPDATE.
    - Four eyes: the person the run acts for may not approve unless the rule allows it (SelfApproval).
    - `grant_ttl_seconds`: approve and grant the rest of the run (config, rule, run id) that long.
    """
    if decision not in DECISIONS:
        raise WrongDecision(f"decision must be one of {', '.join(DECISIONS)}")
    kind, status, action = DECISIONS[decision]
    if approval.kind != kind:
        pair = "approve or reject" if approval.kind == ApprovalKind.GATE else "proceed or stop"
        raise WrongDecision(f"A {approval.get_kind_display().lower()} request is decided with {pair}, not {decision}")
    if grant_ttl_seconds is not None:
        _check_grant(approval=approval, decision=decision, ttl_seconds=grant_ttl_seconds)
    if status == Status.APPROVED and refuses_self_approval(approval=approval, user=user):
        raise SelfApproval(
            f"{approval.public_id} acts for {approval.requested_by}, and its rule needs another reviewer's "
            "approval (four eyes). You may reject it; ask another reviewer to approve it."
        )
    now = timezone.now()
    if status == Status.APPROVED and approval.approvals_required > 1:
        return _approval_vote(approval=approval, user=user, reason=reason, now=now)
    grant_id = new_public_id("grt") if grant_ttl_seconds is not None else None
    with transaction.atomic():
        won = _decided(
            approval=approval, user=user, status=status, action=action, reason=reason, now=now, grant_id=grant_id
        )
        if won:
            if grant_id:
                grant = _grant_create(
                    public_id=grant_id, approval=approval, user=user, now=now, ttl_seconds=grant_ttl_seconds
                )
                # Every process hears of the grant by NOTIFY; this one knows at commit, before it answers.
                transaction.on_commit(live_grants_until.clear)
                audit_append(
                    workspace_id=approval.workspace_id,
                    actor=actor_of(user=user),
                    action="grant.created",
                    object=grant_id,
                    data={
                        "approval": approval.public_id,
                        "run_id": approval.run_id,
                        "expires_at": grant.expires_at.isoformat(),
                    },
                    at=now,
                )
            # Every way a request resolves tells its contacts, in the deciding transaction.
            deliveries_for_resolution(approvals=[approval], event=DeliveryEvent.DECIDED)
    if not won:
        approval_expire_if_overdue(approval=approval)
    approval.refresh_from_db()
    return approval, not won


def _decided(
    *,
    approval: ApprovalRequest,
    user,
    status: str,
    action: str,
    reason: str,
    now: datetime,
    grant_id: str | None = None,
    quorum: bool = False,
) -> bool:
    """Decide a pending request if it still is one; returns whether this call decided it.

    The conditional UPDATE is the arbiter (a decided request is never overwritten). The request must
    still be pending and — a single decision — not yet overdue, or — a quorum's flip — have as many
    votes as it needs: the database compares, never Python. When it wins, the same statement appends
    its `approval.decided` audit record and wakes its long-polls (NOTIFY, sent at commit), so auditing
    a decision costs no round trip (bench/audit.py). Call inside the deciding transaction.
    """
    email = getattr(user, "email", "") or ""
    audit = {"outcome": status, "action": action, "reason": reason}
    if connection.vendor != "postgresql":
        rows = ApprovalRequest.objects.filter(pk=approval.pk, status=Status.PENDING)
        if quorum:
            votes = (
                Vote.objects.filter(approval_id=OuterRef("pk"))
                .order_by()
                .values("approval_id")
                .annotate(n=Count("id"))
                .values("n")
            )
            rows = rows.filter(approvals_required__lte=Subquery(votes))
        else:
            rows = rows.filter(expires_at__gt=now)
        values = {"grant_id": grant_id} if grant_id else {}
        won = rows.update(
            status=status,
            decision_action=action,
            decided_at=now,
            decided_by=user,
            decided_by_email=email,
            reason=reason,
            **values,
        )
        if won:
            audit_append(
                workspace_id=approval.workspace_id,
                actor=actor_of(user=user),
                action="approval.decided",
                object=approval.public_id,
                data=audit,
                at=now,
            )
        return bool(won)
    params = {
        "id": approval.pk,
        "pending": Status.PENDING,
        "status": status,
        "action": action,
        "now": now,
        "user": getattr(user, "pk", None),
        "email": email,
        "reason": reason,
        "grant": grant_id,
        "channel": CHANNEL,
        "public_id": approval.public_id,
    }
    audited = _audit_enabled()
    if audited:
        params.update(workspace=approval.workspace_id, actor=actor_of(user=user), data=canonical(audit))
    sql = _DECIDE_SQL.format(
        condition=_QUORUM_MET if quorum else "expires_at > %(now)s", audit=_DECIDED_AUDIT if audited else ""
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone() is not None


# _decided on PostgreSQL: the UPDATE, its audit record (`audit_record`, when the log is on) and the
# NOTIFY in one statement. grant_id is only ever set by a decision that grants (NULL otherwise, as
# every pending request has it).
_DECIDE_SQL = f"""
WITH won AS (
    UPDATE {ApprovalRequest._meta.db_table}
    SET status = %(status)s, decision_action = %(action)s, decided_at = %(now)s, decided_by_id = %(user)s,
        decided_by_email = %(email)s, reason = %(reason)s, grant_id = %(grant)s
    WHERE id = %(id)s AND status = %(pending)s AND {{condition}}
    RETURNING id
){{audit}}
SELECT pg_notify(%(channel)s, %(public_id)s) FROM won
"""
_QUORUM_MET = f"approvals_required <= (SELECT count(*) FROM {Vote._meta.db_table} WHERE approval_id = %(id)s)"
_DECIDED_AUDIT = f""", audit_record AS (
    INSERT INTO {AuditRecord._meta.db_table} (workspace_id, at, actor, action, object, data)
    SELECT %(workspace)s, %(now)s, %(actor)s, 'approval.decided', %(public_id)s, %(data)s::jsonb FROM won
)"""


def _check_grant(*, approval: ApprovalRequest, decision: str, ttl_seconds: int) -> None:
    if decision != "approve":
        raise GrantNotAllowed("A run grant comes with an approval: send decision approve with grant run.")
    if not approval.allow_run_grant:
        why = (
            f"its rule needs {approval.approvals_required} approvals"
            if approval.approvals_required > 1
            else "its rule does not allow run grants"
        )
        raise GrantNotAllowed(f"{approval.public_id} cannot be approved for the rest of its run: {why}.")
    if not GRANT_TTL_MIN <= ttl_seconds <= GRANT_TTL_MAX:
        raise GrantTtlOutOfRange(
            f"grant_ttl_seconds is from {GRANT_TTL_MIN} to {GRANT_TTL_MAX:,} seconds (8 hours); "
            f"leave it out for {GRANT_TTL_DEFAULT:,}."
        )


def _grant_create(*, public_id: str, approval: ApprovalRequest, user, now, ttl_seconds: int) -> Grant:
    return Grant.objects.create(
        public_id=public_id,
        workspace_id=approval.workspace_id,
        config_id=approval.config_id,
        rule_id=approval.rule_id,
        run_id=approval.run_id,
        approval=approval,
        granted_by=user,
        granted_by_email=getattr(user, "email", "") or "",
        created_at=now,
        expires_at=now + timedelta(seconds=ttl_seconds),
    )


def _approval_vote(*, approval: ApprovalRequest, user, reason: str, now) -> tuple[ApprovalRequest, bool]:
    """Record one reviewer's approval of a quorum request; the N-th flips it, exactly once.

    The request's row lock queues every vote behind the one before, so each sees all earlier votes
    and the pending check and vote INSERT cannot outrun a decision. The flip is a conditional UPDATE
    over the vote count — the database compares, never Python — and only it wakes long-polls.
    """
    with transaction.atomic():
        pending = (
            ApprovalRequest.objects.select_for_update()
            .filter(pk=approval.pk, status=Status.PENDING, expires_at__gt=now)
            .values_list("pk", flat=True)
        )
        if pending:
            if Vote.objects.filter(approval_id=approval.pk, reviewer=user).exists():
                approval.refresh_from_db()
                return approval, True  # already voted: nothing changes
            Vote.objects.create(approval_id=approval.pk, reviewer=user, reviewer_email=user.email, at=now, note=reason)
            audit_append(
                workspace_id=approval.workspace_id,
                actor=actor_of(user=user),
                action="approval.voted",
                object=approval.public_id,
                data={"vote": "approve", "reason": reason},
                at=now,
            )
            flipped = _decided(
                approval=approval,
                user=user,
                status=Status.APPROVED,
                action=Action.RESUME,
                reason=reason,
                now=now,
                quorum=True,
            )
            if flipped:
                deliveries_for_resolution(approvals=[approval], event=DeliveryEvent.DECIDED)
            approval.refresh_from_db()
            return approval, False
    approval_expire_if_overdue(approval=approval)
    approval.refresh_from_db()
    return approval, True


@transaction.atomic
def grant_revoke(*, grant: Grant, user: AbstractBaseUser | None = None) -> Grant:
    """Revoke at once: the next registration of that run pends again. Revoking twice changes nothing."""
    if Grant.objects.filter(pk=grant.pk, revoked_at__isnull=True).update(revoked_at=timezone.now()):
        audit_append(
            workspace_id=grant.workspace_id,
            actor=actor_of(user=user),
            action="grant.revoked",
            object=grant.public_id,
            data={"run_id": grant.run_id},
        )
    grant.refresh_from_db()
    return grant


def approval_expire_if_overdue(*, approval: ApprovalRequest) -> ApprovalRequest:
    """Persist the expiry of an overdue request (a read already sees it expired, this makes it so)."""
    if approval.status == Status.PENDING and approval.is_overdue():
        expire_requests(ApprovalRequest.objects.filter(pk=approval.pk))
        approval.refresh_from_db()
    return approval


def expire_requests(queryset: QuerySet[ApprovalRequest]) -> int:
    """Mark the overdue pending requests of `queryset` expired; returns how many were."""
    now = timezone.now()
    with transaction.atomic():
        # Locked, so the rows read are exactly the rows expired (a decision in between drops out).
        overdue = list(
            queryset.filter(status=Status.PENDING, expires_at__lte=now)
            .select_for_update()
            .values_list("pk", "workspace_id", "public_id", "expires_at")
        )
        if not overdue:
            return 0
        count = ApprovalRequest.objects.filter(pk__in=[row[0] for row in overdue], status=Status.PENDING).update(
            status=Status.EXPIRED, decided_at=F("expires_at"), reason=EXPIRED_REASON, decision_action=""
        )
        _audit_expired(overdue=[row[1:] for row in overdue], now=now)
        notify_changed_many([row[2] for row in overdue])
        expired = ApprovalRequest.objects.filter(pk__in=[row[0] for row in overdue], status=Status.EXPIRED)
        deliveries_for_resolution(approvals=list(expired.only(*_RESOLVED)), event=DeliveryEvent.EXPIRED)
    return count


# What deliveries_for_resolution reads of a resolved request.
_RESOLVED = ("id", "workspace_id", "rule_id", "config_id", "config_version")


def _audit_expired(*, overdue: list[tuple], now) -> None:
    """One `approval.expired` record per (workspace_id, public_id, expires_at), by the system."""
    audit_append_many(
        entries=[
            AuditEntry(
                workspace_id=workspace_id,
                actor=SYSTEM,
                action="approval.expired",
                object=public_id,
                data={"expires_at": expires_at.isoformat()},
                at=now,
            )
            for workspace_id, public_id, expires_at in overdue
        ]
    )


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
        return expire_requests(ApprovalRequest.objects.filter(pk__in=claimed))


# One statement per batch — claim, expire, audit and notify — costing one round trip: within 2x
# of a bare UPDATE of the same rows (bench/sweep.py). Each expired request's `approval.expired`
# record is written by the statement itself ({audit}), exactly as _audit_expired writes it; the
# rows it returns are only what the outbox needs, and the outbox is asked once per batch.
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
    RETURNING apr.id, apr.workspace_id, apr.rule_id, apr.config_id, apr.config_version, apr.public_id, apr.expires_at
){{audit}}
SELECT id, workspace_id, rule_id, config_id, config_version, pg_notify(%(channel)s, public_id)
FROM swept
"""

# The sweep's audit CTE: one unsealed `approval.expired` record per swept row, by the system, at the
# sweep's `now`, its payload {"expires_at": <Python's datetime.isoformat() of the UTC deadline>}:
# microseconds only when there are some, and "+00:00" (tests/approvals/test_expiry.py compares).
_SWEEP_AUDIT_CTE = f"""
, audit_expired AS (
    INSERT INTO {AuditRecord._meta.db_table} (workspace_id, at, actor, action, object, data)
    SELECT workspace_id, %(now)s, %(actor)s, 'approval.expired', public_id, jsonb_build_object(
        'expires_at', CASE WHEN right(at_utc, 7) = '.000000' THEN left(at_utc, 19) ELSE at_utc END || '+00:00'
    )
    FROM swept, to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS at_utc
)"""


def _sweep_batch_postgres(*, now, batch_size: int) -> int:
    params = {
        "pending": Status.PENDING,
        "expired": Status.EXPIRED,
        "now": now,
        "batch": batch_size,
        "reason": EXPIRED_REASON,
        "channel": CHANNEL,
        "actor": SYSTEM,
    }
    sql = _SWEEP_SQL.format(audit=_SWEEP_AUDIT_CTE if _audit_enabled() else "")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        # Only the requests whose rule tells someone go to the outbox, as plain rows, not models.
        tells = resolution_tells({(row[3], row[4], row[2]) for row in rows})
        if tells:
            resolved = [Resolved(*row[:5]) for row in rows if (row[3], row[4], row[2]) in tells]
            deliveries_for_resolution(approvals=resolved, event=DeliveryEvent.EXPIRED)
    return len(rows)


# --- Engines: registration and outcome (docs/api.md, Engines) ---------------------------------------

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
    requested_by: str = "",
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
        if connection.in_atomic_block or connection.vendor != "postgresql":
            # A savepoint, so a refused INSERT leaves the caller's transaction usable.
            with transaction.atomic():
                _insert(approval, engine_key=engine_key, deliveries=deliveries, now=now)
        else:
            _insert(approval, engine_key=engine_key, deliveries=deliveries, now=now)  # autocommit: one statement
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
# What every new request starts with — nobody has decided, granted, run or reported it yet — is written
# into the statement as literals, not bound: eleven fewer values for psycopg to adapt per registration,
# and the run-grant form stays within psycopg's 50-parameter parse cache (it bound 55 and was re-parsed
# on every call). _insert refuses an instance that holds anything else in them.
_FRESH = {
    "status": Status.PENDING.value,
    "decided_at": None,
    "decided_by_id": None,
    "decided_by_email": "",
    "decision_action": "",
    "reason": "",
    "grant_id": None,
    "execution_status": "",
    "execution_id": "",
    "execution_detail": "",
    "executed_at": None,
}
_BOUND_FIELDS = [field for field in _INSERT_FIELDS if field.attname not in _FRESH]


def _literal(value: str | None) -> str:
    """One of _FRESH's constants as SQL (never client input: those are always bound)."""
    return "NULL" if value is None else "'" + value.replace("'", "''") + "'"


_INSERT_SQL = "INSERT INTO {table} ({columns}) VALUES ({values}) RETURNING id".format(
    table=ApprovalRequest._meta.db_table,
    columns=", ".join(f'"{field.column}"' for field in _INSERT_FIELDS),
    values=", ".join(_literal(_FRESH[field.attname]) if field.attname in _FRESH else "%s" for field in _INSERT_FIELDS),
)
# _insert wraps it as a CTE beside its `approval.registered` audit record and its outbox rows, one
# statement: if the INSERT is refused (an idempotent replay) neither is written.


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
    (index, field) for index, field in enumerate(_BOUND_FIELDS) if field.get_internal_type() == "JSONField"
]


def _registered(approval: ApprovalRequest, *, engine_key: ApiToken) -> AuditEntry:
    data = {"kind": approval.kind, "config_id": approval.config.public_id, "config_version": approval.config_version}
    if approval.kind == ApprovalKind.GATE:
        data.update(rule_id=approval.rule_id, target=approval.target, operation=approval.operation)
        data.update(call_digest=approval.call_digest)
    else:
        data.update(scope=approval.scope, tokens_used=approval.tokens_used, token_cap=approval.token_cap)
    data.update(run_id=approval.run_id)
    return AuditEntry(
        workspace_id=approval.workspace_id,
        actor=actor_of(engine_key=engine_key),
        action="approval.registered",
        object=approval.public_id,
        data=data,
        at=approval.created_at,
    )


# A rule that allows run grants inserts through this form of the same statement: a CTE reads the
# live grant of (config, rule, run) and the row goes in already approved when there is one. Still
# one statement and one round trip, so a request no grant covers pays only an index probe (bench/policy.py).
# The grant's columns are scalar subqueries of `live` inside a plain VALUES row: an INSERT … SELECT
# joined to `live` cost PostgreSQL ≈0.1 ms more a registration to plan and run (pgbench, 30 November).
_GRANTED = {
    "status": f"COALESCE((SELECT '{Status.APPROVED.value}'::varchar FROM live), {_literal(_FRESH['status'])})",
    "grant_id": "(SELECT public_id FROM live)",
    "decided_at": "(SELECT %s::timestamptz FROM live)",  # bound: now
    "decided_by_id": "(SELECT granted_by_id FROM live)",
    "decided_by_email": f"COALESCE((SELECT granted_by_email FROM live), {_literal(_FRESH['decided_by_email'])})",
    "decision_action": f"COALESCE((SELECT '{Action.RESUME.value}'::varchar FROM live), "
    f"{_literal(_FRESH['decision_action'])})",
    "reason": "COALESCE((SELECT 'Approved for the rest of this run by ' || granted_by_email || ' (' || public_id "
    f"|| ')' FROM live), {_literal(_FRESH['reason'])})",
}
_GRANTED_INSERT_CTES = """
live AS (
    SELECT public_id, granted_by_id, granted_by_email FROM {grants}
    WHERE config_id = %s AND rule_id = %s AND run_id = %s AND revoked_at IS NULL AND expires_at > %s
      AND (%s OR lower(granted_by_email) <> lower(%s))
    ORDER BY expires_at DESC
    LIMIT 1
), apr AS (
    INSERT INTO {table} ({columns}) VALUES ({values})
    RETURNING id, status, grant_id, decided_at, decided_by_id, decided_by_email, decision_action, reason
)""".format(
    grants=Grant._meta.db_table,
    table=ApprovalRequest._meta.db_table,
    columns=", ".join(f'"{field.column}"' for field in _INSERT_FIELDS),
    values=", ".join(
        _GRANTED.get(field.column) or (_literal(_FRESH[field.attname]) if field.attname in _FRESH else "%s")
        for field in _INSERT_FIELDS
    ),
)


# Its audit records: the registration's (APPEND_CTE's row) and, only when `live` found a grant, the
# grant's use — one INSERT for both (a second CTE inserting into the same table cost ≈0.08 ms more).
_AUDIT_WITH_GRANT_USED_CTE = f"""audit_record AS (
    INSERT INTO {AuditRecord._meta.db_table} (workspace_id, at, actor, action, object, data)
    SELECT %s, %s::timestamptz, %s, %s, %s, %s::jsonb
    UNION ALL
    SELECT %s, %s::timestamptz, %s, 'grant.used', live.public_id, %s::jsonb FROM live
)"""


# Per process, while it hears every new grant (hitl_portal/listened.py; the hub LISTENs on GRANTS_CHANNEL):
# (config pk, rule id) → {run id: when the last of its unrevoked grants expires} for the runs whose
# grants were live when read. A request of a run-grant rule usually has no live grant for its run,
# and then registers through the plain statement: probing the grant index in the INSERT cost
# ≈0.3 ms (bench/policy.py). Only a new grant can make a kept value wrong — revoked and expired
# grants never come back — and each one empties the cache. Were it ever wrong, the request would
# wait for a person instead of being approved by the grant: the safe side.
live_grants_until = ListenedCache()


def _may_have_live_grant(approval: ApprovalRequest, *, now: datetime) -> bool:
    """False only when this process knows the request's run has no live grant under its rule."""
    key = (approval.config_id, approval.rule_id)
    runs = live_grants_until.get(key)
    if runs is None:
        if not live_grants_until.live:
            return True  # nothing is kept in this process: the statement probes
        generation = live_grants_until.generation
        live = Grant.objects.live(now).filter(config_id=approval.config_id, rule_id=approval.rule_id)
        runs = dict(live.values("run_id").annotate(until=Max("expires_at")).values_list("run_id", "until"))
        live_grants_until.put(key, runs, generation)
    until = runs.get(approval.run_id)
    return until is not None and until > now


def _insert(approval: ApprovalRequest, *, engine_key: ApiToken, deliveries: list[Delivery] = (), now) -> None:
    """INSERT the request with its audit record and outbox rows in one statement (CTEs): atomic in autocommit.

    A request a live run grant covers goes in approved, and then tells its contacts nothing: there
    is nothing left to ask them.
    """
    audited = _audit_enabled()
    if connection.vendor != "postgresql":
        if approval.allow_run_grant:
            _apply_grant(approval, _live_grant(approval, now=now), now=now)
        approval.save(force_insert=True)  # the caller's savepoint holds the request, its record and deliveries
        if approval.status == Status.PENDING:
            for delivery in deliveries:
                delivery.approval = approval
            Delivery.objects.bulk_create(deliveries)
        if audited:
            audit_append_many(entries=[_registered(approval, engine_key=engine_key)])
            if approval.grant_id:
                audit_append(
                    workspace_id=approval.workspace_id,
                    actor=actor_of(engine_key=engine_key),
                    action="grant.used",
                    object=approval.grant_id,
                    data={"approval": approval.public_id},
                    at=now,
                )
        return
    approval.ensure_public_id()
    values = approval.__dict__
    stale = [name for name, fresh in _FRESH.items() if values[name] != fresh]
    if stale:
        raise ValueError(f"_insert writes {stale} as a new request's; this one has them set")
    params = [values[field.attname] for field in _BOUND_FIELDS]
    for index, field in _NEEDS_PREPARING:
        params[index] = field.get_db_prep_save(params[index], connection)
    probe = approval.allow_run_grant and _may_have_live_grant(approval, now=now)
    if probe:
        # A grant never approves for the person the run acts for when the rule wants four eyes.
        lookup = [approval.config_id, approval.rule_id, approval.run_id, now]
        lookup += [approval.self_approval or not approval.requested_by, approval.requested_by]
        ctes = [_GRANTED_INSERT_CTES]
        params = lookup + _granted_params(params, now=now)
    else:
        ctes = [f"apr AS ({_INSERT_SQL})"]
    if audited:
        params += append_params(_registered(approval, engine_key=engine_key))
        if probe:
            ctes.append(_AUDIT_WITH_GRANT_USED_CTE)
            params += [
                approval.workspace_id,
                now,
                actor_of(engine_key=engine_key),
                canonical({"approval": approval.public_id}),
            ]
        else:
            ctes.append(APPEND_CTE)
    if deliveries:
        ctes.append(_DELIVERIES_CTE_GRANTED if probe else _DELIVERIES_CTE)
        params.append(_deliveries_json(deliveries))
    sql = "WITH " + ", ".join(ctes) + " SELECT * FROM apr"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    approval.pk = row[0]
    if probe:
        (
            approval.status,
            approval.grant_id,
            approval.decided_at,
            approval.decided_by_id,
            approval.decided_by_email,
            approval.decision_action,
            approval.reason,
        ) = row[1:]
    approval._state.adding = False
    approval._state.db = connection.alias


# The deliveries' INSERT, fed by the request's INSERT as a CTE: one round trip, no BEGIN/COMMIT.
# A request a grant approved at once has nothing to ask (apr.status is returned only by that form).
# The rows travel as one JSON parameter, however many contacts: psycopg caches how it splits a
# statement of up to 50 parameters and 4,096 characters, and re-parses a longer one on every call —
# one parameter per column per row cost a notified registration ≈400 µs of CPU (bench/notify.py).
_DELIVERY_FIELDS = [
    field for field in Delivery._meta.concrete_fields if not field.primary_key and field.name != "approval"
]
_DELIVERIES_CTE = (
    f'dlv AS (INSERT INTO {Delivery._meta.db_table} ("approval_id", '
    + ", ".join(f'"{field.column}"' for field in _DELIVERY_FIELDS)
    + ") SELECT apr.id, v.* FROM apr, jsonb_to_recordset(%s::jsonb) AS v("
    + ", ".join(f'"{field.column}" {field.db_type(connection)}' for field in _DELIVERY_FIELDS)
    + ") {where})"
)
_DELIVERIES_CTE_GRANTED = _DELIVERIES_CTE.format(where=f"WHERE apr.status = '{Status.PENDING.value}'")
_DELIVERIES_CTE = _DELIVERIES_CTE.format(where="")


def _deliveries_json(deliveries: list[Delivery]) -> str:
    """The rows for jsonb_to_recordset: each column's value, datetimes in full ISO 8601 (microseconds kept)."""
    rows = []
    for delivery in deliveries:
        row = {}
        for field in _DELIVERY_FIELDS:
            value = getattr(delivery, field.attname)
            row[field.column] = value.isoformat() if isinstance(value, datetime) else value
        rows.append(row)
    return json.dumps(rows, separators=(",", ":"))


def _granted_params(params: list, *, now) -> list:
    """The plain INSERT's bound values for _GRANTED_INSERT_CTES, with `now` where decided_at is bound."""
    out, bound = [], iter(params)
    for field in _INSERT_FIELDS:
        if field.column == "decided_at":
            out.append(now)
        elif field.attname not in _FRESH:
            out.append(next(bound))
    return out


def _live_grant(approval: ApprovalRequest, *, now) -> Grant | None:
    grants = Grant.objects.live(now).filter(
        config_id=approval.config_id, rule_id=approval.rule_id, run_id=approval.run_id
    )
    if approval.requested_by and not approval.self_approval:
        grants = grants.exclude(granted_by_email__iexact=approval.requested_by)
    return grants.order_by("-expires_at").first()


def _apply_grant(approval: ApprovalRequest, grant: Grant | None, *, now) -> None:
    if grant is None:
        return
    approval.status = Status.APPROVED
    approval.grant_id = grant.public_id
    approval.decided_at = now
    approval.decided_by_id = grant.granted_by_id
    approval.decided_by_email = grant.granted_by_email
    approval.decision_action = Action.RESUME
    approval.reason = f"Approved for the rest of this run by {grant.granted_by_email} ({grant.public_id})"


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
    now = timezone.now()
    with transaction.atomic():
        reported = ApprovalRequest.objects.filter(pk=approval.pk, status=Status.APPROVED, execution_status="").update(
            execution_status=status, execution_id=execution_id, execution_detail=detail, executed_at=now
        )
        approval.refresh_from_db(from_queryset=ApprovalRequest.objects.select_related("config", "engine_key"))
        if reported:
            audit_append(
                workspace_id=approval.workspace_id,
                actor=actor_of(engine_key=approval.engine_key) if approval.engine_key else SYSTEM,
                action="approval.outcome",
                object=approval.public_id,
                data={"status": status, "execution_id": execution_id, "detail": detail},
                at=now,
            )
    if not reported and approval.status != Status.APPROVED:
        raise NotApproved(
            f"{approval.public_id} is {approval.status}, not approved: an outcome is reported only for an "
            "approved call, which must not run otherwise."
        )
    return approval, not reported
