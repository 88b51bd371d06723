"""Long-poll for a decision: `GET /api/v1/approvals/{apr}?wait=S`.

Under the ASGI server (`make serve`) a wait is a future in the event loop: approvals/waiters.py
(one LISTEN connection per process) and approvals/api_wait.py. What is here is shared by both
servers — the per-process count of waits and the per-key cap — plus the wait a *thread* does
under a WSGI server (the test live server, a gthread deploy):

PostgreSQL: LISTEN on the request's own connection (autocommit, no transaction held while
waiting), re-read once to close the race with a decision made before the LISTEN, then block on
psycopg's notifies() until our id is announced, the request expires, or the wait is over.
SQLite has no NOTIFY: a short sleep-poll loop.
"""

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import connection
from django.utils import timezone
from rest_framework import status
from rest_framework.exceptions import APIException

from .models import ApprovalRequest, Status
from .notify import CHANNEL

logger = logging.getLogger(__name__)

# SQLite's poll interval: short enough to feel immediate in a demo, long enough to stay cheap.
POLL_INTERVAL = 0.2
# What a 429 too_many_waits tells the engine: by then some of its waits have usually been answered.
RETRY_AFTER_SECONDS = 5


# How ApprovalDetailView treats ?wait (request.hitl_wait_mode): under the ASGI server it first runs with
# DEFER (it leaves a WaitPlan on the request instead of waiting), then, after the wait, with WAITED.
DEFER, WAITED = "defer", "waited"


@dataclass(frozen=True)
class WaitPlan:
    public_id: str
    token_id: int | None  # the cap and revocation go by token; a browser session has none
    user_id: int | None
    seconds: float  # the wait asked for, or less: until the request expires
    ends_at_expiry: bool = False  # then the answer must be read again (it reads as expired)


class TooManyWaits(APIException):
    """docs/api.md, Operations: one wait more than HITL_MAX_WAITS_PER_KEY → 429 with Retry-After."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_code = "too_many_waits"

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"This key already holds {limit:,} waits on this server process (HITL_MAX_WAITS_PER_KEY); "
            f"wait for some to be answered, or poll without ?wait, and retry after {RETRY_AFTER_SECONDS} s."
        )
        self.wait = RETRY_AFTER_SECONDS  # DRF's handler turns it into the Retry-After header


class WaitSlots:
    """The waits this process holds, in all and per key: the cap, and the `hitl_waiting_engines` figure.

    A wait counts against its token (an engine key or a person's token) or, for a browser session,
    against its user: HITL_MAX_WAITS_PER_KEY each. Per process, not per deployment: counting across
    processes would cost a database round trip per wait, so a key may hold up to
    HITL_MAX_WAITS_PER_KEY × (server processes) waits in all.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()  # WSGI threads and the ASGI event loop alike
        self._per_key: Counter[tuple[str, int]] = Counter()
        self.total = 0

    @staticmethod
    def _key(token_id: int | None, user_id: int | None) -> tuple[str, int] | None:
        if token_id is not None:
            return ("token", token_id)
        return ("user", user_id) if user_id is not None else None

    def take(self, token_id: int | None, user_id: int | None = None) -> None:
        """Count one wait more for this token (else this session's user), or raise TooManyWaits."""
        limit = settings.HITL_MAX_WAITS_PER_KEY
        key = self._key(token_id, user_id)
        with self._lock:
            if key is not None:
                if self._per_key[key] >= limit:
                    raise TooManyWaits(limit)
                self._per_key[key] += 1
            self.total += 1

    def give_back(self, token_id: int | None, user_id: int | None = None) -> None:
        key = self._key(token_id, user_id)
        with self._lock:
            if key is not None:
                self._per_key[key] -= 1
                if not self._per_key[key]:
                    del self._per_key[key]
            self.total -= 1

    def held_by(self, token_id: int) -> int:
        return self._per_key[("token", token_id)]


slots = WaitSlots()


def waiting_count() -> int:
    """How many long-polls this process holds right now (for the `hitl_waiting_engines` metric)."""
    return slots.total


def approval_wait(
    *,
    load: Callable[[], ApprovalRequest],
    approval: ApprovalRequest,
    seconds: float,
    token_id: int | None = None,
    user_id: int | None = None,
) -> ApprovalRequest:
    """Return the request as soon as it is no longer pending, or after `seconds` with it still pending.

    `load()` re-reads the request (scoped to the caller's workspace, config loaded). This thread
    waits: the WSGI servers' way, and a browser session's under the ASGI server (there it waits on
    the process's LISTEN hub, holding no database connection). Raises TooManyWaits when the token
    (or, without one, the session's user) holds its cap already.
    """
    if seconds <= 0 or not is_waiting(approval):
        return approval
    slots.take(token_id, user_id)
    try:
        deadline = time.monotonic() + seconds
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            waited = _wait_on_server_hub(
                load=load, approval=approval, deadline=deadline, token_id=token_id, user_id=user_id
            )
            if waited is not None:
                return waited
            return _wait_notified(load=load, approval=approval, deadline=deadline)
        return _wait_polling(load=load, approval=approval, deadline=deadline)
    finally:
        slots.give_back(token_id, user_id)


def is_waiting(approval: ApprovalRequest) -> bool:
    """Still pending now (an overdue request reads as expired): worth waiting for."""
    return approval.effective_status(timezone.now()) == Status.PENDING


def _remaining(approval: ApprovalRequest, deadline: float) -> float:
    """Seconds until the wait is over or the request expires, whichever is sooner."""
    until_expiry = (approval.expires_at - timezone.now()).total_seconds()
    return max(0.0, min(deadline - time.monotonic(), until_expiry))


def _wait_polling(*, load, approval: ApprovalRequest, deadline: float) -> ApprovalRequest:
    while is_waiting(approval):
        remaining = _remaining(approval, deadline)
        if remaining <= 0:
            break
        time.sleep(min(POLL_INTERVAL, remaining))
        approval = load()
    return approval


def _wait_on_server_hub(
    *, load, approval: ApprovalRequest, deadline: float, token_id: int | None, user_id: int | None
) -> ApprovalRequest | None:
    """Under the ASGI server, a sync view's wait (a browser session's) on the event loop's hub; None elsewhere.

    Its pooled connection goes back first: the pool is a handful of connections per process, and a
    LISTEN held on one for 30 s per waiting reviewer would soon leave the pages none.
    """
    from .waiters import wait_from_thread

    if not _server_hub_reachable():
        return None
    connection.close()  # pooled (settings.pooled_under_asgi): back to the pool; load() takes one again
    wait_from_thread(
        public_id=approval.public_id,
        token_id=token_id,
        user_id=user_id,
        seconds=_remaining(approval, deadline),
    )
    return load()


def _server_hub_reachable() -> bool:
    from .waiters import server_loop

    return server_loop() is not None and bool(settings.DATABASES["default"].get("OPTIONS", {}).get("pool"))


def _wait_notified(*, load, approval: ApprovalRequest, deadline: float) -> ApprovalRequest:
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute(f"LISTEN {CHANNEL}")
    try:
        # A decision committed between our first read and the LISTEN sent its NOTIFY to nobody.
        approval = load()
        pg = connection.connection  # the psycopg 3 connection under Django's wrapper
        while is_waiting(approval):
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
