"""The hub's contract under faults (docs/hub.md): its LISTEN connection killed, or silently cut off.

In both, an engine key revoked from outside the server is refused within 5 s — by a fresh call and
by a long-poll already waiting with it — and no wait is lost: a request decided meanwhile reaches
the engine waiting on it.
"""

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests
from django.utils import timezone

from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from edge.hub import APPLICATION_NAME
from tests.asgi import AsgiServer
from tests.factories import make_bulk
from tests.helpers import make_token
from tests.loopback import database_url
from workspaces.models import ApiToken

from .conftest import raw_connection, wait_for

REFUSED_WITHIN = 5.0


class Blackhole:
    """A TCP proxy to PostgreSQL whose connections can be cut off one by one without a word: what it
    reads from either side of a cut connection it drops, and it closes nothing (a dead NAT entry, a
    pulled cable). Connections opened after a cut pass as before."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.cut: set[int] = set()  # the proxy's own ports towards PostgreSQL (pg_stat_activity.client_port)
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Blackhole":
        self.thread.start()
        self.ready.wait(10)
        return self

    def __exit__(self, *exc) -> None:
        async def stop() -> None:
            tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self.loop.stop()

        asyncio.run_coroutine_threadsafe(stop(), self.loop)
        self.thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self.ready.set()
        self.loop.run_forever()

    async def _serve(self, client_reader, client_writer) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(*self.upstream)
        port = upstream_writer.get_extra_info("sockname")[1]
        await asyncio.gather(
            self._pipe(client_reader, upstream_writer, port),
            self._pipe(upstream_reader, client_writer, port),
            return_exceptions=True,
        )
        for writer in (client_writer, upstream_writer):
            writer.close()

    async def _pipe(self, reader, writer, port: int) -> None:
        while data := await reader.read(65536):
            if port in self.cut:
                continue  # into the black hole
            writer.write(data)
            await writer.drain()

    def url(self, database: str) -> str:
        host_port = database.split("@", 1)[1].split("/", 1)[0]
        return database.replace(f"@{host_port}/", f"@127.0.0.1:{self.port}/")


def hub_backends() -> list[tuple[int, int]]:
    """(pid, client port) of the server's LISTEN and checker connections."""
    with raw_connection() as conn:
        return conn.execute(
            "SELECT pid, client_port FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()",
            [APPLICATION_NAME],
        ).fetchall()


def engine(world, name: str) -> tuple[str, ApiToken, str]:
    """A second engine key of acme's, and one pending request of its own."""
    raw = make_token(world["workspace"], engine=name)
    key = ApiToken.objects.get(workspace=world["workspace"], kind="engine", name=name)
    (request,) = make_bulk(
        world["config"],
        1,
        engine_key=key,
        level="summary",
        statuses=("pending",),
        config_version=world["version"].number,
        rule_id=world["rule"].public_id,
    )
    return raw, key, request.public_id


def poll(server: AsgiServer, token: str, public_id: str, wait: float = 0) -> requests.Response:
    return requests.get(
        f"{server.url}/api/v1/approvals/{public_id}",
        params={"wait": wait} if wait else None,
        headers={"Authorization": f"Bearer {token}"},
        timeout=60,
    )


def test_key_refused_and_no_wait_lost_when_the_listen_backend_is_terminated(world):
    with AsgiServer(PGAPPNAME="hitl-faults-hub") as server:
        check_faults(server, world, cut=terminate_hub_backends)


def test_key_refused_and_no_wait_lost_when_the_listen_connection_is_blackholed(world):
    upstream = database_url().split("@", 1)[1].split("/", 1)[0].split(":")
    with Blackhole((upstream[0], int(upstream[1]))) as hole:
        with AsgiServer(database=hole.url(database_url()), PGAPPNAME="hitl-faults-hub") as server:
            check_faults(server, world, cut=lambda: hole.cut.update(port for _, port in hub_backends()))


def terminate_hub_backends() -> None:
    with raw_connection() as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", [APPLICATION_NAME]
        )


def check_faults(server: AsgiServer, world, *, cut) -> None:
    revoked_raw, revoked_key, revoked_request = engine(world, "revoked-engine")
    waiting_raw, _, waiting_request = engine(world, "waiting-engine")
    wait_for(lambda: len(hub_backends()) >= 1, timeout=30, what="the hub to listen")
    for _ in range(3):  # the server now knows the key (engine keys are kept while the hub listens)
        assert poll(server, revoked_raw, revoked_request).status_code == 200

    with ThreadPoolExecutor(2) as pool:
        revoked_wait = pool.submit(poll, server, revoked_raw, revoked_request, 25)
        decided_wait = pool.submit(poll, server, waiting_raw, waiting_request, 25)
        time.sleep(1)  # both waits are held

        cut()
        ApiToken.objects.filter(pk=revoked_key.pk).update(revoked_at=timezone.now())
        revoked_at = time.monotonic()
        approval = ApprovalRequest.objects.select_related("config").get(public_id=waiting_request)
        approval_decide(approval=approval, user=world["bob"], decision="approve")

        while poll(server, revoked_raw, revoked_request).status_code != 401:
            assert time.monotonic() - revoked_at < REFUSED_WITHIN, "the revoked key was still accepted"
            time.sleep(0.1)
        # The long-poll already waiting with it ends with the same refusal, as soon.
        assert revoked_wait.result(timeout=max(0.1, revoked_at + REFUSED_WITHIN - time.monotonic())).status_code == 401
        # The decision made while nothing was heard reaches its waiting engine (the re-read after reconnecting).
        answer = decided_wait.result(timeout=max(0.1, revoked_at + REFUSED_WITHIN - time.monotonic()))
        assert answer.status_code == 200 and answer.json()["status"] == "approved"

    # The hub listens again, on connections of its own.
    wait_for(lambda: len(hub_backends()) >= 1, timeout=10, what="the hub to listen again")
