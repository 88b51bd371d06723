"""Long-poll for a decision: `GET /api/v1/approvals/{apr}?wait=S`.

PostgreSQL: LISTEN on the request's own connection (autocommit, no transaction held while
waiting), re-read once to close the race with a decision made before the LISTEN, then block on
psycopg's notifies() until our id is announced, the request expires, or the wait is over.
SQLite has no NOTIFY: a short sleep-poll loop.
"""

import logging
import time
from collections.abc import Callable

from django.db import connection
from django.utils import timezone

from hitl_portal.operations import waiting_engines

from .models import ApprovalRequest, Status
from .notify import CHANNEL

logger = logging.getLogger(__name__)

# SQLite's poll interval: short enough to feel immediate in a demo, long enough to stay cheap.
POLL_INTERVAL = 0.2


def approval_wait(*, load: Callable[[], ApprovalRequest], approval: ApprovalRequest, seconds: float) -> ApprovalRequest:
    """Return the request as soon as it is no longer pending, or after `seconds` with it still pending.

    `load()` re-reads the request (scoped to the caller's workspace, config loaded).
    """
    if seconds <= 0 or not _waiting(approval):
        return approval
    deadline = time.monotonic() + seconds
    with waiting_engines.holding():  # hitl_waiting_engines (/metrics)
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            return _wait_notified(load=load, approval=approval, deadline=deadline)
        return _wait_polling(load=load, approval=approval, deadline=deadline)


def _waiting(approval: ApprovalRequest) -> bool:
    return approval.effective_status(timezone.now()) == Status.PENDING


def _remaining(approval: ApprovalRequest, deadline: float) -> float:
    """Seconds until the wait is over or the request expires, whichever is sooner."""
    until_expiry = (approval.expires_at - timezone.now()).total_seconds()
    return max(0.0, min(deadline - time.monotonic(), until_expiry))


def _wait_polling(*, load, approval: ApprovalRequest, deadline: float) -> ApprovalRequest:
    while _waiting(approval):
        remaining = _remaining(approval, deadline)
        if remaining <= 0:
            break
        time.sleep(min(POLL_INTERVAL, remaining))
        approval = load()
    return approval


def _wait_notified(*, load, approval: ApprovalRequest, deadline: float) -> ApprovalRequest:
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute(f"LISTEN {CHANNEL}")
    try:
        # A decision committed between our first read and the LISTEN sent its NOTIFY to nobody.
        approval = load()
        pg = connection.connection  # the psycopg 3 connection under Django's wrapper
        while _waiting(approval):
            remaining = _remaining(approval, deadline)
            if remaining <= 0:
                break
            for notice in pg.notifies(timeout=remaining):
                if notice.payload == approval.public_id:
                    break
            # Woken by our id, or timed out (the deadline or the expiry): either way read the truth.
            approval = load()
    finally:
        _unlisten()
    return approval


def _unlisten() -> None:
    """Connections are persistent: leave no LISTEN (nor stale notifications) behind for the next request."""
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"UNLISTEN {CHANNEL}")
        for _ in connection.connection.notifies(timeout=0):
            pass
    except Exception:  # a broken connection cannot keep a LISTEN either; let Django replace it
        logger.warning("UNLISTEN failed; closing the connection", exc_info=True)
        connection.close()
