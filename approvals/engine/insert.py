"""The registration's INSERT, written once by hand: the request, its audit record and its outbox
rows in one statement (CTEs), atomic in autocommit, one round trip.

On the registration hot path, compiling the ORM's INSERT per request cost more than PostgreSQL
took to run it (bench/). The import-time check below refuses to start when the statement and the
model disagree; tests/approvals/test_engine_register.py reads every column back.
"""

import json
from datetime import datetime
from functools import cache

import psycopg
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.db.models import DateField, DateTimeField, Field

from approvals.grants.services import grant_may_approve, may_have_live_grant
from approvals.halts.covering import COVERING_SQL
from approvals.models import Action, ApprovalKind, ApprovalRequest, Grant, Status
from approvals.questions.validate import ASKED_ACTIONS
from audit.chain import canonical
from audit.services import APPEND_CTE, AuditEntry, actor_of, append_params, record_cte
from contacts.models import Delivery
from workspaces.models import ApiToken

# The INSERT the ORM would send for a new request, written once: on the registration hot path,
# compiling it per request cost more than PostgreSQL took to run it (bench/).
_INSERT_FIELDS = [field for field in ApprovalRequest._meta.concrete_fields if not field.primary_key]
# What every new request starts with — nobody has decided, granted, run or reported it yet — is written
# into the statement as literals, not bound: twelve fewer values for psycopg to adapt per registration,
# and the run-grant form stays within psycopg's 50-parameter parse cache (it bound 55 and was re-parsed
# on every call). insert_request refuses an instance that holds anything else in them.
_FRESH = {
    "status": Status.PENDING.value,
    "decided_at": None,
    "decided_by_id": None,
    "decided_by_email": "",
    "on_behalf_of": "",
    "decision_action": "",
    "reason": "",
    "grant_id": None,
    "execution_status": "",
    "execution_id": "",
    "execution_detail": "",
    "executed_at": None,
    "opened_at": None,
    "undeliverable": False,
    "approved_arguments": None,
    "approved_digest": "",
    "execution_digest": "",
    "answers": None,
}
# Columns a new request usually leaves at one value — another kind's columns, the rarer policies — are
# literals too while they hold it, bound when not: each combination is its own statement text (a handful
# in practice, each built once: _form), and each form stays within psycopg's 50-parameter parse cache.
_USUAL = {
    # a question's or a plan's
    "title": "",
    "questions": None,
    "plan": "",
    # a gate's rarer policies and inputs
    "arguments_schema": None,
    "allow_edit": False,
    "require_passkey": False,
    "condition_error": "",
}


def _literal(value: str | bool | None) -> str:
    """One of _FRESH's or _USUAL's constants as SQL (never client input: what differs is always bound)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return "NULL" if value is None else "'" + value.replace("'", "''") + "'"


def _check_insert_fields() -> None:
    """At import: the INSERT writes every concrete column, each from the instance as it stands.

    It skips save() and so each field's pre_save(): a field whose value the ORM computes at save
    time (auto_now, a database default, a generated column, its own pre_save) would be stored
    wrong. Such a field must go through the ORM, so the process refuses to start instead.
    """
    written = {field.column for field in _INSERT_FIELDS}
    model = {field.column for field in ApprovalRequest._meta.concrete_fields if not field.primary_key}
    if written != model:
        raise ImproperlyConfigured(
            f"insert_request writes {sorted(written ^ model)} unlike the model: fix _INSERT_FIELDS"
        )
    plain_pre_save = (Field.pre_save, DateField.pre_save, DateTimeField.pre_save)
    for field in _INSERT_FIELDS:
        computed = getattr(field, "auto_now", False) or getattr(field, "auto_now_add", False)
        if computed or field.generated or field.has_db_default() or type(field).pre_save not in plain_pre_save:
            raise ImproperlyConfigured(
                f"ApprovalRequest.{field.name} is computed at save time; the hand-written INSERT cannot store it"
            )


_check_insert_fields()


def _registered(approval: ApprovalRequest, *, engine_key: ApiToken) -> AuditEntry:
    data = {"kind": approval.kind, "config_id": approval.config.public_id, "config_version": approval.config_version}
    if approval.kind == ApprovalKind.GATE:
        data.update(rule_id=approval.rule_id, target=approval.target, operation=approval.operation)
        data.update(call_digest=approval.call_digest)
    elif approval.is_question:
        data.update(title=approval.title)
        if approval.questions is not None:
            data.update(questions=[question["id"] for question in approval.questions])
    else:
        data.update(scope=approval.scope, tokens_used=approval.tokens_used, token_cap=approval.token_cap)
    data.update(run_id=approval.run_id)
    return AuditEntry(
        workspace_id=approval.workspace_id,
        actor=actor_of(engine_key=engine_key),
        action=ASKED_ACTIONS.get(approval.kind, "approval.registered"),
        object=approval.public_id,
        data=data,
        at=approval.created_at,
    )


# A request that may fall under a grant inserts through this form of the same statement: a CTE reads
# the live run grant of (config, rule, run) or rule window of (config, rule), and the row goes in
# already approved when there is one (and no halt covers it). Still one statement and one round trip,
# so a request no grant covers pays only an index probe (bench/policy.py).
# The grant's columns are scalar subqueries of `live` inside a plain VALUES row: an INSERT … SELECT
# joined to `live` costs PostgreSQL more to plan and run (bench/policy.py).
# The reason a grant's approval records: a rule window's own reason, or the run grant's.
_GRANT_REASON = (
    "(SELECT CASE WHEN scope = 'rule' THEN 'Approved under the rule window of ' || granted_by_email || ' ('"
    " || public_id || '): ' || reason ELSE 'Approved for the rest of this run by ' || granted_by_email || ' ('"
    " || public_id || ')' END FROM live)"
)
_RETURNING = "RETURNING id, status, grant_id, decided_at, decided_by_id, decided_by_email, decision_action, reason"
_LIVE_CTE = f"""
live AS (
    SELECT public_id, granted_by_id, granted_by_email, scope, reason FROM {Grant._meta.db_table}
    WHERE config_id = %s AND rule_id = %s AND run_id IN (%s, '') AND revoked_at IS NULL AND expires_at > %s
      AND (%s OR lower(granted_by_email) <> lower(%s))
    ORDER BY expires_at DESC
    LIMIT 1
)"""

# Every registration goes through this form: a CTE reads the halt that covers the request — the workspace
# frozen, or its run halted (under any config, or its own) — through hitl_halt_covering, which first
# takes the workspace's halt lock shared (approvals/halts/covering.py), so a halt committing meanwhile is
# either seen here or sees this row. Covered, the row goes in already rejected with the halt's reason and
# halter. A halt wins over a run grant (it revoked them, but one made since must not approve a halted
# run). Bound: the config (its workspace is read through it) and the run; the halt's action is a literal (one form per
# action), and decided_at shares the one bound `now` with the grant's.
_HALT_CTE = "\nhalt AS (" + COVERING_SQL + ")"


def _halted(action: str) -> dict[str, str]:
    return {
        "status": f"COALESCE((SELECT '{Status.REJECTED.value}'::varchar FROM halt), {_literal(_FRESH['status'])})",
        "decided_at": "CASE WHEN EXISTS (SELECT FROM halt) THEN %s::timestamptz END",  # bound: now
        "decided_by_id": "(SELECT halted_by_id FROM halt)",
        "decided_by_email": f"COALESCE((SELECT halted_by_email FROM halt), {_literal(_FRESH['decided_by_email'])})",
        "decision_action": f"COALESCE((SELECT {_literal(action)}::varchar FROM halt), "
        f"{_literal(_FRESH['decision_action'])})",
        "reason": f"COALESCE((SELECT reason FROM halt), {_literal(_FRESH['reason'])})",
    }


def _halted_granted(action: str) -> dict[str, str]:
    """Both: the halt first, else the grant, else pending."""
    return {
        "status": f"COALESCE((SELECT '{Status.REJECTED.value}'::varchar FROM halt), "
        f"(SELECT '{Status.APPROVED.value}'::varchar FROM live), {_literal(_FRESH['status'])})",
        "grant_id": "(SELECT public_id FROM live WHERE NOT EXISTS (SELECT FROM halt))",
        "decided_at": "CASE WHEN EXISTS (SELECT FROM halt) OR EXISTS (SELECT FROM live) THEN %s::timestamptz END",
        "decided_by_id": "COALESCE((SELECT halted_by_id FROM halt), (SELECT granted_by_id FROM live))",
        "decided_by_email": "COALESCE((SELECT halted_by_email FROM halt), (SELECT granted_by_email FROM live), "
        f"{_literal(_FRESH['decided_by_email'])})",
        "decision_action": f"COALESCE((SELECT {_literal(action)}::varchar FROM halt), "
        f"(SELECT '{Action.RESUME.value}'::varchar FROM live), {_literal(_FRESH['decision_action'])})",
        "reason": f"COALESCE((SELECT reason FROM halt), {_GRANT_REASON}, {_literal(_FRESH['reason'])})",
    }


_HALT_ACTIONS = (Action.HALT, Action.STOP_RUN)  # a halted token cap stops the run; anything else halts


class _Form:
    """The statement's forms for one set of `unusual` columns (bound, the rest of _USUAL as literals)."""

    def __init__(self, unusual: frozenset[str]) -> None:
        self.constant = {**_FRESH, **{name: value for name, value in _USUAL.items() if name not in unusual}}
        # In column order, what params() binds: decided_at (`now`, in the grant's and the halt's forms) and
        # every column not constant here, with whether JSON's adapter must prepare it.
        self.bound = [
            (field, field.get_internal_type() == "JSONField", field.column == "decided_at")
            for field in _INSERT_FIELDS
            if field.attname not in self.constant or field.column == "decided_at"
        ]
        self.halted = {a: _HALT_CTE + ", apr AS (" + self._insert(_halted(a)) + ")" for a in _HALT_ACTIONS}
        self.halted_granted = {
            a: _HALT_CTE + ", " + _LIVE_CTE + ", apr AS (" + self._insert(_halted_granted(a)) + ")"
            for a in _HALT_ACTIONS
        }

    def _insert(self, expressions: dict[str, str], returning: str = _RETURNING) -> str:
        """The request's INSERT, these columns computed in the statement, the constants as literals."""
        values = (
            expressions.get(field.column)
            or (_literal(self.constant[field.attname]) if field.attname in self.constant else "%s")
            for field in _INSERT_FIELDS
        )
        return "INSERT INTO {table} ({columns}) VALUES ({values}) {returning}".format(
            table=ApprovalRequest._meta.db_table,
            columns=", ".join(f'"{field.column}"' for field in _INSERT_FIELDS),
            values=", ".join(values),
            returning=returning,
        )

    def params(self, values: dict, *, now=None) -> list:
        """The bound values in column order; `now` where a grant's or a halt's form binds decided_at."""
        out = []
        for field, is_json, is_decided_at in self.bound:
            if is_decided_at:
                if now is not None:
                    out.append(now)
            else:
                value = values[field.attname]
                out.append(field.get_db_prep_save(value, connection) if is_json else value)
        return out


@cache
def _form(unusual: frozenset[str]) -> _Form:
    return _Form(unusual)


# Its audit records: the registration's (APPEND_CTE's row) and, only when `live` found a grant, the
# grant's use — one INSERT for both (a second CTE inserting into the same table costs more).
_AUDIT_WITH_GRANT_USED_CTE = record_cte(
    "audit_record",
    "SELECT %s, %s::timestamptz, %s, %s, %s, %s::jsonb "
    "UNION ALL SELECT %s, %s::timestamptz, %s, 'grant.used', live.public_id, %s::jsonb FROM live{halted}",
)
# A halt in force: the grant was not used.
_UNLESS_HALTED = " WHERE NOT EXISTS (SELECT FROM halt)"
_AUDIT_WITH_GRANT_USED_UNLESS_HALTED_CTE = _AUDIT_WITH_GRANT_USED_CTE.replace("{halted}", _UNLESS_HALTED)


def insert_request(approval: ApprovalRequest, *, engine_key: ApiToken, deliveries: list[Delivery] = (), now) -> None:
    """INSERT the request with its audit record and outbox rows in one statement (CTEs): atomic in autocommit.

    A request a live run grant or rule window covers goes in approved, one a halt covers goes in
    rejected (the halt wins), and then tells its contacts nothing: there is nothing left to ask them.
    """
    approval.ensure_public_id()
    values = approval.__dict__
    stale = [name for name, fresh in _FRESH.items() if values[name] != fresh]
    if stale:
        raise ValueError(f"insert_request writes {stale} as a new request's; this one has them set")
    form = _form(frozenset(name for name, usual in _USUAL.items() if values[name] != usual))
    # Any gate may fall in a rule window (run id ""); a run grant counts only where the rule allows them.
    probe = (
        approval.kind == ApprovalKind.GATE and grant_may_approve(approval) and may_have_live_grant(approval, now=now)
    )
    # A halt stops the whole run: its questions and plans too, with the gate's action (approvals/halts/services.py).
    halt_action = Action.STOP_RUN if approval.is_token_cap else Action.HALT
    params = [approval.config_id, approval.run_id]  # the halt's CTE, first in every form
    if probe:
        # A grant never approves for the person the run acts for when the rule wants four eyes.
        run_id = approval.run_id if approval.allow_run_grant else ""
        params += [approval.config_id, approval.rule_id, run_id, now]
        params += [approval.self_approval or not approval.requested_by, approval.requested_by]
        ctes = [form.halted_granted[halt_action]]
    else:
        ctes = [form.halted[halt_action]]
    params += form.params(values, now=now)  # now at decided_at
    params += append_params(_registered(approval, engine_key=engine_key))
    if probe:
        ctes.append(_AUDIT_WITH_GRANT_USED_UNLESS_HALTED_CTE)
        params += [
            approval.workspace_id,
            now,
            actor_of(engine_key=engine_key),
            canonical({"approval": approval.public_id}),
        ]
    else:
        ctes.append(APPEND_CTE)
    if deliveries:
        ctes.append(_DELIVERIES_CTE_UNDECIDED)
        params.append(_deliveries_json(deliveries))
    sql = "WITH " + ", ".join(ctes) + " SELECT * FROM apr"
    row = _execute_prepared(sql, params)
    approval.pk = row[0]
    (
        approval.status,
        approval.grant_id,
        approval.decided_at,
        approval.decided_by_id,
        approval.decided_by_email,
        approval.decision_action,
        approval.reason,
    ) = row[1:]


class _PreparingCursor(psycopg.Cursor):
    """Binds server-side and prepares every statement it runs (psycopg's public `prepare=True`)."""

    def execute(self, query, params=None, *, prepare=None, binary=None):
        return super().execute(query, params, prepare=True, binary=binary)


def _execute_prepared(sql: str, params: list) -> tuple:
    """Run the registration's statement prepared, through Django's cursor wrapper (its transaction, its
    execute wrappers, its errors, its query log), as Django's own `connection.cursor()` would.

    The statement is long (every column, its CTEs): sent as text with its values inlined (Django's
    client-side binding), PostgreSQL spent more on parsing and planning it than on running it
    (docs/performance.md). Bound server-side and prepared, a pooled connection parses and plans each
    form once. Django's own cursors bind client-side and never prepare; DATABASES'
    `prepare_threshold` (settings) lets this one.
    """
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    connection.validate_thread_sharing()
    raw = _PreparingCursor(connection.connection)
    wrapped = connection.make_debug_cursor(raw) if connection.queries_logged else connection.make_cursor(raw)
    with wrapped as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


# The deliveries' INSERT, fed by the request's INSERT as a CTE: one round trip, no BEGIN/COMMIT.
# A request a grant approved at once has nothing to ask (apr.status is returned only by that form).
# The rows travel as one JSON parameter, however many contacts: psycopg caches how it splits a
# statement of up to 50 parameters and 4,096 characters, and re-parses a longer one on every call —
# one parameter per column per row made a notified registration CPU-bound (bench/notify.py).
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
_DELIVERIES_CTE_UNDECIDED = _DELIVERIES_CTE.format(where=f"WHERE apr.status = '{Status.PENDING.value}'")


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
