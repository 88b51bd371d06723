"""The one wait: a LISTEN connection per process fans NOTIFYs out to every waiting long-poll.

A waiter is an asyncio future keyed by its request's public id (and indexed by its token and user, for
revocation). Per process, whatever the number of waiters, at most two PostgreSQL connections:

- the *listener* LISTENs on `hitl_approvals` (a request was decided or expired, approvals/notify.py) and
  `hitl_tokens` (a key was revoked or deleted, a user deactivated or removed from a workspace: triggers in
  workspaces/migrations/0002) and resolves the matching futures;
- the *checker* re-reads, in one batched query, every waiter that needs it: all of them after the listener
  reconnects (NOTIFYs sent while it was down are lost), and a new waiter the listener may have missed something
  for (below). Batches are at most CHECK_BATCH waiters, the event loop free between them, so ten thousand arriving
  engines do not stall the pages and polls this process serves meanwhile.

A waiter is registered before its caller's first read of the request (`register`), so a decision committed after
that read finds it through its NOTIFY, and it needs no read again. Only its token and user are known after the
read: `hold` indexes them, and re-reads the waiter when the hub heard of any token or user change since the
registration, or was not listening then, or reconnected since — else a revocation committed between the read and
`hold` would go unheard.

A resolved waiter does not carry the answer: the edge reads the request again through the same code as a plain
poll, which also authenticates again (so a revoked key gets its 401 there). The same connection keeps the
process's ListenedCaches right: engine keys, live grants, halts.

The contract (docs/hub.md): the listener's connection is Django's DATABASES with its OPTIONS, TCP keepalives and a
heartbeat every HEARTBEAT_SECONDS. From a heartbeat missed or the connection lost until it has reconnected, every
listened cache is off (reads go to the database); after it reconnects, every waiter is read again.
"""

import asyncio
import logging
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import psycopg
from django.conf import settings
from django.contrib.auth import get_user_model
from psycopg.conninfo import make_conninfo

from approvals.grants.services import live_grants_until
from approvals.halts.services import halts_in_force
from approvals.models import ApprovalRequest, Status
from approvals.notify import CHANNEL, GRANTS_CHANNEL, HALTS_CHANNEL, TOKENS_CHANNEL
from workspaces.authentication import engine_keys
from workspaces.models import ApiToken

logger = logging.getLogger(__name__)


def _keep_while_listening(*, live: bool) -> None:
    """Empty the caches this connection keeps right (engine keys, rules' live grants, workspaces' halts,
    who browser sessions are); keep them only if live."""
    for cache in (engine_keys, live_grants_until, halts_in_force):
        cache.invalidate(live=live)


CHANNELS = (CHANNEL, TOKENS_CHANNEL, GRANTS_CHANNEL, HALTS_CHANNEL)
APPLICATION_NAME = "hitl-waiting"  # in pg_stat_activity: what the bench counts and the fault tests kill
RECONNECT_DELAYS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
# A stopping server gives waits back HITL_RELEASE_PER_SECOND a second, all within RELEASE_WITHIN_SECONDS
# (inside gunicorn's 30 s): given all at once, the other node queued them, decisions with them (seconds).
RELEASE_TICK_SECONDS, RELEASE_WITHIN_SECONDS = 0.05, 15
# Waiters re-read per query. One query for a few hundred ids costs about what one for a few costs,
# and converting its rows holds the event loop for a few milliseconds at most.
CHECK_BATCH = 500


@dataclass(eq=False)
class Waiter:
    public_id: str
    token_id: int | None
    user_id: int | None
    # What ended the wait: True, the request may have changed (read it again); False, the time is up;
    # None, the caller let go (its client hung up).
    future: asyncio.Future = field(repr=False)
    heard: tuple[int, int] | None = None  # what the hub had heard at registration (None: not listening)

    def wake(self) -> None:
        self._end(True)

    def time_up(self) -> None:
        self._end(False)

    def let_go(self, *_) -> None:
        """Also a done callback (of the caller's hang-up watch)."""
        self._end(None)

    def _end(self, result: bool | None) -> None:
        if not self.future.done():
            self.future.set_result(result)

    def needs_check(self) -> bool:
        return not self.future.done()


def _pending_sql() -> str:
    table = ApprovalRequest._meta.db_table
    return (
        f"SELECT public_id FROM {table} WHERE public_id = ANY(%s) AND status = '{Status.PENDING}'"
        " AND expires_at > now()"
    )


def _live_tokens_sql() -> str:
    tokens, users = ApiToken._meta.db_table, get_user_model()._meta.db_table
    return (
        f"SELECT t.id FROM {tokens} t LEFT JOIN {users} u ON u.id = t.user_id"
        " WHERE t.id = ANY(%s) AND t.revoked_at IS NULL AND (t.user_id IS NULL OR u.is_active)"
    )


# What Django's DATABASES OPTIONS may hold that is Django's or psycopg's rather than libpq's.
NOT_LIBPQ = {"pool", "server_side_binding", "isolation_level", "assume_role", "prepare_threshold", "cursor_factory"}
# A dead peer is noticed by TCP within about 10 s even where nothing is sent (keepalives), and a
# connection attempt into a black hole gives up after CONNECT_TIMEOUT; the heartbeat (below) is faster.
KEEPALIVES = {"keepalives": 1, "keepalives_idle": 5, "keepalives_interval": 2, "keepalives_count": 2}
CONNECT_TIMEOUT = 5


def conninfo() -> str:
    """Django's default database as a libpq connection string: its OPTIONS (sslmode, options with a
    search_path, …) included, TCP keepalives and a connect timeout added where OPTIONS set none.
    HITL_LISTEN_DATABASE_URL's instead when set: DATABASE_URL may be a transaction pooler, which
    cannot LISTEN (hitl_portal/databases.py)."""
    db = getattr(settings, "HITL_LISTEN_DATABASE", None) or settings.DATABASES["default"]
    parts = {"dbname": db["NAME"], "user": db.get("USER"), "password": db.get("PASSWORD"), "host": db.get("HOST")}
    parts["port"] = str(db["PORT"]) if db.get("PORT") else None
    parts.update({key: value for key, value in db.get("OPTIONS", {}).items() if key not in NOT_LIBPQ})
    for key, value in {**KEEPALIVES, "connect_timeout": CONNECT_TIMEOUT}.items():
        parts.setdefault(key, value)
    return make_conninfo("", **{key: value for key, value in parts.items() if value not in (None, "")})


# The listener asks PostgreSQL for a reply this often, and counts a reply later than HEARTBEAT_TIMEOUT
# as a dead connection: every listened cache is off from then until it has reconnected (docs/hub.md).
HEARTBEAT_SECONDS = 1.5
HEARTBEAT_TIMEOUT = 1.5
# A checker's batch not answered within this long: its connection is dropped and the batch retried.
CHECK_TIMEOUT = 5.0


class HeartbeatMissed(Exception):
    pass


async def within(awaitable, seconds: float):
    """`awaitable`'s result, or TimeoutError after `seconds` — without waiting for it to wind down
    (psycopg cancels a query it is interrupted in on the server, which a dead connection never answers)."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=seconds)
    if not done:
        task.cancel()
        task.add_done_callback(lambda t: t.cancelled() or t.exception())  # retrieved: nothing logged
        raise TimeoutError
    return task.result()


class WaitHub:
    """The waiters of one event loop (one server process) and the two connections that serve them."""

    def __init__(self) -> None:
        self.by_request: dict[str, set[Waiter]] = defaultdict(set)
        self.by_token: dict[int, set[Waiter]] = defaultdict(set)
        self.by_user: dict[int, set[Waiter]] = defaultdict(set)
        self.listening = asyncio.Event()
        self.connects = 0  # how many times the listener has (re)connected: the fault tests watch it
        self.token_events = 0  # NOTIFYs heard of a token, user or workspace change
        self.draining = False  # the server is shutting down: every wait is given back (`release_all`)
        self._to_check: set[Waiter] = set()
        self._check_wanted = asyncio.Event()
        self._checker: psycopg.AsyncConnection | None = None
        self._tasks = [asyncio.create_task(self._listen()), asyncio.create_task(self._check_forever())]

    @property
    def count(self) -> int:
        return sum(len(waiters) for waiters in self.by_request.values())

    def register(self, public_id: str) -> Waiter:
        """A waiter for `public_id`, before the caller reads the request. Give it to `hold`, or to
        `forget` if there is nothing to wait for."""
        waiter = Waiter(public_id, None, None, asyncio.get_running_loop().create_future(), self._heard())
        self._add(waiter)
        return waiter

    async def hold(self, waiter: Waiter, *, token_id: int | None, user_id: int | None, seconds: float) -> bool | None:
        """True when the request may have changed (decided, expired, token revoked); False after `seconds`;
        None when the caller let go (`Waiter.let_go`: its client hung up). The caller holds a slot
        (waiting.slots) meanwhile; however it ends, the waiter is gone at once. One future and one timer
        a wait: thousands are held at once, and every object they keep is walked by the collector."""
        waiter.token_id, waiter.user_id = token_id, user_id
        self._add(waiter)  # by its token and user too, now that they are known
        timer = asyncio.get_running_loop().call_later(seconds, waiter.time_up)
        if self.draining:
            waiter.time_up()
        try:
            if waiter.heard is None or waiter.heard != self._heard():
                self._check([waiter])
            return await waiter.future
        finally:
            timer.cancel()
            self._remove(waiter)

    def forget(self, waiter: Waiter) -> None:
        self._remove(waiter)

    def release_all(self) -> None:
        """Shutting down: end every wait as if its time were up (200, the request as it stands: its engine
        asks again elsewhere) at the pace above, and every wait to come at once."""
        if not self.draining:
            self.draining = True
            self._tasks.append(asyncio.create_task(self._release(self.all_waiters())))

    async def _release(self, waiters: list[Waiter]) -> None:
        per_second = max(settings.HITL_RELEASE_PER_SECOND, len(waiters) / RELEASE_WITHIN_SECONDS)
        per_tick = max(1, round(per_second * RELEASE_TICK_SECONDS))
        for start in range(0, len(waiters), per_tick):
            for waiter in waiters[start : start + per_tick]:
                waiter.time_up()
            await asyncio.sleep(RELEASE_TICK_SECONDS)

    def _heard(self) -> tuple[int, int] | None:
        """Changes to it mean something may have gone unheard: a reconnection, a token or user change."""
        return (self.connects, self.token_events) if self.listening.is_set() else None

    # ------------------------------------------------------------------------------------ bookkeeping

    def _add(self, waiter: Waiter) -> None:
        self.by_request[waiter.public_id].add(waiter)
        if waiter.token_id is not None:
            self.by_token[waiter.token_id].add(waiter)
        if waiter.user_id is not None:
            self.by_user[waiter.user_id].add(waiter)

    def _remove(self, waiter: Waiter) -> None:
        keys = ((self.by_request, waiter.public_id), (self.by_token, waiter.token_id), (self.by_user, waiter.user_id))
        for index, key in keys:
            if key is not None and key in index:
                index[key].discard(waiter)
                if not index[key]:
                    del index[key]
        self._to_check.discard(waiter)

    def all_waiters(self) -> list[Waiter]:
        return [waiter for waiters in self.by_request.values() for waiter in waiters]

    def _wake(self, waiters: Iterable[Waiter] | None) -> None:
        for waiter in list(waiters or ()):
            waiter.wake()

    def _dispatch(self, channel: str, payload: str) -> None:
        if channel == CHANNEL:
            self._wake(self.by_request.get(payload))
            return
        if channel == GRANTS_CHANNEL:
            live_grants_until.clear()  # a new grant: read rules' live grants afresh
            return
        if channel == HALTS_CHANNEL:
            halts_in_force.clear()  # a halt made or lifted: read which workspaces have one afresh
            return
        engine_keys.clear()  # a key, a user or a workspace changed: look keys up afresh
        self.token_events += 1
        kind, _, raw_id = payload.partition(":")
        if kind == "truncate":  # a whole table of keys, users, members or workspaces emptied
            self._check(self.all_waiters())
        elif raw_id.isdigit():
            index = self.by_token if kind == "token" else self.by_user if kind == "user" else {}
            self._wake(index.get(int(raw_id)))

    # ---------------------------------------------------------------------------------- the listener

    async def _listen(self) -> None:
        attempt = 0
        while True:
            conn = None
            try:
                conn = await psycopg.AsyncConnection.connect(
                    conninfo(), autocommit=True, application_name=APPLICATION_NAME
                )
                for channel in CHANNELS:
                    await within(conn.execute(f"LISTEN {channel}"), HEARTBEAT_TIMEOUT)
                self.connects += 1
                self.listening.set()
                _keep_while_listening(live=True)  # from now on every change is heard
                attempt = 0
                # Whatever was decided or revoked while nobody listened: read every waiter again.
                self._check(self.all_waiters())
                while True:
                    async for notice in conn.notifies(timeout=HEARTBEAT_SECONDS):
                        self._dispatch(notice.channel, notice.payload)
                    try:
                        await within(conn.execute("SELECT 1"), HEARTBEAT_TIMEOUT)
                    except TimeoutError:
                        raise HeartbeatMissed(f"no reply within {HEARTBEAT_TIMEOUT} s") from None
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("LISTEN connection lost; reconnecting", exc_info=True)
            finally:
                _keep_while_listening(live=False)  # deaf: a revocation or a new grant could go unheard
                self.listening.clear()
                if conn is not None:
                    await _close(conn)
            await asyncio.sleep(RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)])
            attempt += 1

    # ----------------------------------------------------------------------------------- the checker

    def _check(self, waiters: Iterable[Waiter]) -> None:
        self._to_check.update(waiters)
        self._check_wanted.set()

    async def _check_forever(self) -> None:
        """Re-read waiters in batches: a thousand engines arriving at once cost a few queries, not a thousand."""
        attempt = 0
        while True:
            await self._check_wanted.wait()
            self._check_wanted.clear()
            batch: list[Waiter] = []
            while self._to_check and len(batch) < CHECK_BATCH:
                waiter = self._to_check.pop()
                if waiter.needs_check():
                    batch.append(waiter)
            if self._to_check:  # the rest in the next round, after the loop has served others
                self._check_wanted.set()
                await asyncio.sleep(0)
            if not batch:
                continue
            try:
                await self._check_batch(batch)
                attempt = 0
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("re-reading %d waiters failed; retrying", len(batch), exc_info=True)
                await self._close_checker()
                self._check(batch)
                await asyncio.sleep(RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)])
                attempt += 1

    async def _check_batch(self, batch: list[Waiter]) -> None:
        if self._checker is None or self._checker.closed:
            self._checker = await psycopg.AsyncConnection.connect(
                conninfo(), autocommit=True, application_name=APPLICATION_NAME
            )
        ids = sorted({w.public_id for w in batch})
        pending = await within(self._ids(_pending_sql(), ids), CHECK_TIMEOUT)
        token_ids = sorted({w.token_id for w in batch if w.token_id is not None})
        live = await within(self._ids(_live_tokens_sql(), token_ids), CHECK_TIMEOUT) if token_ids else set()
        for waiter in batch:
            if waiter.public_id not in pending or (waiter.token_id is not None and waiter.token_id not in live):
                waiter.wake()

    async def _ids(self, sql: str, ids: list) -> set:
        cursor = await self._checker.execute(sql, [ids])
        return {row[0] for row in await cursor.fetchall()}

    async def _close_checker(self) -> None:
        if self._checker is not None:
            await _close(self._checker)
            self._checker = None

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._close_checker()


async def _close(conn: psycopg.AsyncConnection) -> None:
    try:
        await within(conn.close(), HEARTBEAT_TIMEOUT)
    except Exception:  # already broken, or a black hole: nothing more to release
        pass


_hubs: dict[asyncio.AbstractEventLoop, WaitHub] = {}


def hub() -> WaitHub:
    """This event loop's hub (one per server process), started at the server's startup or the first wait."""
    loop = asyncio.get_running_loop()
    if loop not in _hubs:
        _hubs[loop] = WaitHub()
    return _hubs[loop]


def release_waits(loop: asyncio.AbstractEventLoop) -> None:
    """A graceful shutdown began (edge/server.py): every wait of `loop`'s hub is answered now."""
    if loop in _hubs:
        _hubs[loop].release_all()


async def close_hubs() -> None:
    """At server shutdown (ASGI lifespan): close this loop's connections."""
    hub_ = _hubs.pop(asyncio.get_running_loop(), None)
    if hub_ is not None:
        await hub_.close()


__all__ = ["APPLICATION_NAME", "WaitHub", "Waiter", "close_hubs", "hub", "release_waits"]
