"""Expiry: an overdue pending request becomes expired — one request as it is read, or the sweep's batch.

Both go through one statement (approvals/ending.py): claim, expire, audit and notify, in one round trip. `FOR UPDATE
SKIP LOCKED` lets concurrent sweeps split the work instead of queueing on each other, and skips a
row a reviewer is deciding right now (a reader still sees an overdue request expired, see
ApprovalRequest.effective_status); the UPDATE re-checks `pending`, so a decided row is never
overwritten.
"""

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from approvals.ending import end_pending, ending_statement
from approvals.models import (
    EXPIRED_REASON,
    PLAN_EXPIRED_REASON,
    QUESTION_EXPIRED_REASON,
    UNDELIVERABLE_REASON,
    ApprovalRequest,
    Status,
)
from audit.services import SYSTEM, record_cte
from contacts.models import Delivery, DeliveryEvent, DeliveryStatus
from contacts.outbox import QUESTION_KINDS, Resolved, deliveries_for_resolution, resolution_tells

_TABLE = ApprovalRequest._meta.db_table
# What the sweep reads back of each expired request: enough to tell its contacts (contacts.outbox.Resolved).
_RESOLVED = ("id", "workspace_id", "rule_id", "config_id", "config_version", "kind")

# One unsealed `approval.expired` record per expired row, by the system, at the statement's `now`;
# its payload {"expires_at": <the UTC deadline as Python's datetime.isoformat() writes it>}:
# microseconds only when there are some, and "+00:00" (tests/approvals/test_expiry.py compares).
_EXPIRED_AUDIT = record_cte(
    "audit_expired",
    """SELECT workspace_id, %(now)s, %(actor)s, 'approval.expired', public_id, jsonb_build_object(
        'expires_at', CASE WHEN right(at_utc, 7) = '.000000' THEN left(at_utc, 19) ELSE at_utc END || '+00:00'
    )
    FROM ended, to_char(expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS at_utc""",
)
_EXPIRE_SET = """status = %(expired)s, decided_at = apr.expires_at, decision_action = '',
        reason = CASE apr.kind WHEN 'question' THEN %(question_reason)s WHEN 'plan' THEN %(plan_reason)s
            ELSE %(reason)s END"""
_OVERDUE = f"SELECT id FROM {_TABLE}\n    WHERE status = %(pending)s AND expires_at <= %(now)s"
_OLDEST_FIRST = "\n    ORDER BY expires_at\n    LIMIT %(batch)s"
# The claim takes the oldest overdue requests (the sweep), or only given ids (one request as it is read).
_EXPIRE_SQL = ending_statement(
    set_=_EXPIRE_SET,
    audit=_EXPIRED_AUDIT,
    claim=_OVERDUE + _OLDEST_FIRST,
    columns=_RESOLVED,
    audited=("expires_at",),
)
_EXPIRE_IDS_SQL = ending_statement(
    set_=_EXPIRE_SET,
    audit=_EXPIRED_AUDIT,
    claim=_OVERDUE + " AND id = ANY(%(ids)s)" + _OLDEST_FIRST,
    columns=_RESOLVED,
    audited=("expires_at",),
)

# Undeliverable (approvals/expiry/undeliverable.py): the same end, its claim re-checking — under the
# row lock — that nobody opened the request and none of its notifications went out or is still
# about to (due, never tried); it ends now, before its deadline, marked so, with its own audit action.
_DELIVERY_TABLE = Delivery._meta.db_table
_UNDELIVERABLE_SQL = ending_statement(
    set_="status = %(expired)s, decided_at = %(now)s, reason = %(reason)s, decision_action = '', undeliverable = true",
    audit=record_cte(
        "audit_undeliverable",
        """SELECT workspace_id, %(now)s, %(actor)s, 'approval.undeliverable', public_id,
        jsonb_build_object('reason', 'nobody could be reached', 'after_seconds', %(after)s::int)
    FROM ended""",
    ),
    claim=f"""SELECT id FROM {_TABLE} AS apr
    WHERE status = %(pending)s AND expires_at > %(now)s AND opened_at IS NULL AND id = ANY(%(ids)s)
      AND NOT EXISTS (
        SELECT 1 FROM {_DELIVERY_TABLE} AS dlv
        WHERE dlv.approval_id = apr.id
          AND (dlv.status = %(sent)s
               OR (dlv.status = %(pending)s AND dlv.attempts = 0 AND dlv.next_attempt_at <= %(now)s))
      )
    LIMIT %(batch)s""",
    columns=_RESOLVED[:5],  # as the sweep reads them, without the kind (Resolved's default)
)


def _expire(*, batch_size: int, ids: list[int] | None = None, undeliverable_after: int | None = None) -> int:
    """Expire up to `batch_size` overdue pending requests (only `ids`, if given); returns how many.

    undeliverable_after (seconds): instead, end those of `ids` that nobody could be reached for as
    undeliverable (approvals.expiry.undeliverable decides which are candidates; this statement re-checks).
    """
    params = {
        "pending": Status.PENDING,
        "expired": Status.EXPIRED,
        "now": timezone.now(),
        "batch": batch_size,
        "reason": EXPIRED_REASON,
        "question_reason": QUESTION_EXPIRED_REASON,
        "plan_reason": PLAN_EXPIRED_REASON,
        "actor": SYSTEM,
        "ids": ids,
    }
    if undeliverable_after is not None:
        params.update(reason=UNDELIVERABLE_REASON, sent=DeliveryStatus.SENT, after=undeliverable_after)
        sql = _UNDELIVERABLE_SQL
    else:
        sql = _EXPIRE_IDS_SQL if ids is not None else _EXPIRE_SQL
    with transaction.atomic():
        rows = end_pending(sql, params)
        # Only the requests whose rule tells someone go to the outbox, as plain rows, not models.
        # A question or plan has no rule: its kind stands in the rule's place (outbox.questions_rule).
        keys = {row[0]: (row[3], row[4], row[2] or (row[5] if row[5] in QUESTION_KINDS else "")) for row in rows}
        tells = resolution_tells(set(keys.values()))
        if tells:
            resolved = [Resolved(*row[:6]) for row in rows if keys[row[0]] in tells]
            deliveries_for_resolution(approvals=resolved, event=DeliveryEvent.EXPIRED)
    return len(rows)


def approval_expire_if_overdue(*, approval: ApprovalRequest) -> ApprovalRequest:
    """Persist the expiry of an overdue request (a read already sees it expired, this makes it so)."""
    if approval.is_overdue():
        _expire(batch_size=1, ids=[approval.pk])
        approval.refresh_from_db()
    return approval


def expire_requests(queryset: QuerySet[ApprovalRequest]) -> int:
    """Mark the overdue pending requests of `queryset` expired; returns how many were."""
    ids = list(queryset.overdue().values_list("pk", flat=True))
    return _expire(batch_size=len(ids), ids=ids) if ids else 0


def approvals_end_undeliverable(*, ids: list[int], after_seconds: int) -> int:
    """End the requests of `ids` nobody could be reached for as undeliverable; returns how many were."""
    return _expire(batch_size=len(ids), ids=ids, undeliverable_after=after_seconds) if ids else 0


def approval_sweep_overdue(*, batch_size: int = 1000) -> int:
    """Mark one batch of overdue pending requests expired, oldest first; returns how many. Safe in
    several workers (approvals.tasks.sweep_overdue runs it until a batch comes back short)."""
    return _expire(batch_size=batch_size)
