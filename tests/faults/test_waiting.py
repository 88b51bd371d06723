"""A thousand engines waiting under the ASGI server while the LISTEN connection dies, or all hang up at once."""

import asyncio
import json
import os
import threading
import time

from django.db import transaction

from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from edge.hub import APPLICATION_NAME
from tests.asgi import AsgiServer
from tests.factories import make_bulk

from .conftest import raw_connection, wait_for

ENGINES = 1_000


def pending_requests(world, count: int) -> list[str]:
    rows = make_bulk(
        world["config"],
        count,
        engine_key=world["engine_key"],
        level="summary",
        statuses=("pending",),
        config_version=world["version"].number,
        rule_id=world["rule"].public_id,
    )
    return [row.public_id for row in rows]


class Crowd:
    """ENGINES raw sockets long-polling in a thread of their own; each keeps the answer it got."""

    def __init__(self, port: int, token: str, ids: list[str], wait: float = 30, repoll: bool = True) -> None:
        self.port, self.token, self.ids, self.wait, self.repoll = port, token, ids, wait, repoll
        self.polls = 0
        self.answers: dict[str, object] = {}
        self.sent = 0
        self.loop = asyncio.new_event_loop()
        self.writers: list[asyncio.StreamWriter] = []
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._run(),), daemon=True)

    async def _one(self, public_id: str, gate: asyncio.Semaphore) -> None:
        """Long-poll until decided, as an engine does: a `pending` answer (the wait ran out) polls again."""
        async with gate:  # a ramp, not a thousand SYNs at once on the listen backlog
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        self.writers.append(writer)
        request = (
            f"GET /api/v1/approvals/{public_id}?wait={self.wait} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: Bearer {self.token}\r\n\r\n"
        ).encode()
        first = True
        try:
            while True:
                writer.write(request)
                await writer.drain()
                if first:
                    self.sent += 1
                    first = False
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line[15:]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
                )
                body = json.loads(await reader.readexactly(length))
                status = int(head.split(b" ")[1])
                self.polls += 1
                if status != 200 or body["status"] != "pending" or not self.repoll:
                    self.answers[public_id] = body.get("status") if status == 200 else status
                    return
        except (OSError, asyncio.IncompleteReadError) as exc:
            self.answers[public_id] = type(exc).__name__

    async def _run(self) -> None:
        gate = asyncio.Semaphore(200)
        await asyncio.gather(*(self._one(public_id, gate) for public_id in self.ids), return_exceptions=True)

    def start(self) -> "Crowd":
        self.thread.start()
        return self

    def hang_up(self) -> None:
        """Every engine closes its socket at the same moment, without reading an answer."""

        def close_all() -> None:
            for writer in self.writers:
                writer.transport.abort()

        self.loop.call_soon_threadsafe(close_all)


def server_connections(port_app: str) -> dict[str, list[int]]:
    with raw_connection() as conn:
        rows = conn.execute(
            "SELECT application_name, pid FROM pg_stat_activity WHERE datname = current_database()"
            " AND application_name IN (%s, %s)",
            [port_app, APPLICATION_NAME],
        ).fetchall()
    found: dict[str, list[int]] = {port_app: [], APPLICATION_NAME: []}
    for name, pid in rows:
        found[name].append(pid)
    return found


def settled(server: AsgiServer, world, public_id: str) -> bool:
    """A short long-poll answers promptly once the server has taken in every wait sent before it."""
    import requests

    started = time.monotonic()
    requests.get(
        f"{server.url}/api/v1/approvals/{public_id}?wait=0.05",
        headers={"Authorization": f"Bearer {world['bob_token']}"},
        timeout=60,
    )
    return time.monotonic() - started < 0.5


def test_every_waiting_engine_learns_its_decision_when_the_listen_connection_is_killed(world):
    ids = pending_requests(world, ENGINES)
    with AsgiServer(HITL_MAX_WAITS_PER_KEY="5000", PGAPPNAME="hitl-faults-asgi") as server:
        crowd = Crowd(server.port, world["engine_token"], ids).start()
        wait_for(lambda: crowd.sent == ENGINES, timeout=60, what="every engine to send its long-poll")
        wait_for(lambda: settled(server, world, ids[0]), timeout=90, what="the server to take in every wait", every=0.2)
        before = server_connections("hitl-faults-asgi")[APPLICATION_NAME]
        assert 1 <= len(before) <= 2  # the listener, and the checker once it has had something to re-read

        with raw_connection() as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", [APPLICATION_NAME]
            )
        # Decided while nobody listens: these NOTIFYs are lost; only the re-read after reconnecting finds them.
        with transaction.atomic():
            for approval in ApprovalRequest.objects.filter(public_id__in=ids).select_related("config"):
                approval_decide(approval=approval, user=world["bob"], decision="approve")

        wait_for(
            lambda: len(crowd.answers) == ENGINES,
            timeout=60,
            what=lambda: f"every engine to learn its decision ({len(crowd.answers)} have)",
            every=0.1,
        )
        assert set(crowd.answers.values()) == {"approved"}
        after = server_connections("hitl-faults-asgi")[APPLICATION_NAME]
        assert len(after) == 2 and not set(after) & set(before)  # reconnected: two new connections, still two


def test_a_thousand_engines_hanging_up_at_once_leave_nothing_behind(world):
    ids = pending_requests(world, ENGINES)
    with AsgiServer(HITL_MAX_WAITS_PER_KEY=str(ENGINES), PGAPPNAME="hitl-faults-asgi") as server:
        worker = _worker_pid(server.process.pid)
        threads_before = _threads(worker)
        crowd = Crowd(server.port, world["engine_token"], ids).start()
        wait_for(lambda: crowd.sent == ENGINES, timeout=60, what="every engine to send its long-poll")
        wait_for(lambda: settled(server, world, ids[0]), timeout=90, what="the server to take in every wait", every=0.2)
        assert not crowd.answers  # all of them are waiting
        assert _threads(worker) < threads_before + 20  # waiting holds no thread

        crowd.hang_up()
        time.sleep(1)

        # Every place of the key's cap (HITL_MAX_WAITS_PER_KEY = 1,000) is free again, so the waits are gone
        # (a wait gives its place back in the same `finally` that drops its future), long before their 25 s.
        second = Crowd(server.port, world["engine_token"], ids, wait=1, repoll=False).start()
        wait_for(lambda: len(second.answers) == ENGINES, timeout=60, what="a second crowd's answers", every=0.1)
        assert set(second.answers.values()) == {"pending"}, {v for v in second.answers.values() if v != "pending"}
        held = server_connections("hitl-faults-asgi")
        assert 1 <= len(held[APPLICATION_NAME]) <= 2
        assert len(held["hitl-faults-asgi"]) <= 4  # the pool's HITL_DB_POOL_SIZE, nothing per hung-up waiter
        assert _threads(worker) < threads_before + 20


def _worker_pid(master: int) -> int:
    """The one uvicorn worker under the gunicorn master."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open(f"/proc/{pid}/stat") as stat:
                        if int(stat.read().rsplit(")", 1)[1].split()[1]) == master:
                            return int(pid)
                except OSError:
                    continue
        time.sleep(0.1)
    raise AssertionError("no worker process under the server")


def _threads(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line.split()[1] for line in status if line.startswith("Threads:")))
