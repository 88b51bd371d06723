"""Two portal nodes (`make serve`'s command) behind a real nginx (launch/proxies.py's configuration), with
engines waiting through it on the Python asyncio client: a rolling restart (SIGTERM each node in turn, as a
deploy does) and a node lost (SIGKILL) — every wait is answered once its request is decided, none errors."""

import asyncio
import json
import logging
import os
import signal
import subprocess
import threading
import time

import pytest
import requests
from django.db import transaction
from hitl_client import AsyncHitlClient

from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from tests.asgi import AsgiServer
from tests.loopback import ROOT, free_port
from tests.proxies import Nginx

from .conftest import wait_for
from .test_waiting import pending_requests

METRICS_TOKEN = "faults-metrics-token"
NODE_ENV = {
    "HITL_MAX_WAITS_PER_KEY": "10000",
    "HITL_TRUSTED_PROXIES": "127.0.0.1",
    "HITL_METRICS_TOKEN": METRICS_TOKEN,
    "PGAPPNAME": "hitl-faults-node",
}


class Counted(logging.Handler):
    """What the client logs at WARNING: a reconnect (an error, a reset, a 502) it did not surface."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


class Engines:
    """Engines waiting on their requests through `url` with AsyncHitlClient.wait, on an event loop of their
    own; each keeps what it was answered (status, when) or the exception it surfaced."""

    def __init__(self, url: str, token: str, ids: list[str]) -> None:
        self.ids = ids
        self.reconnects = Counted()
        log = logging.getLogger(f"hitl_client.faults.{id(self)}")
        log.addHandler(self.reconnects)
        log.propagate = False
        self.client = AsyncHitlClient(url, token, timeout=60, log=log)
        self.answers: dict[str, tuple[str, float]] = {}
        self.errors: dict[str, str] = {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_until_complete, args=(self._run(),), daemon=True)

    async def _one(self, public_id: str) -> None:
        try:
            answer = await self.client.wait(public_id, timeout=240)
            self.answers[public_id] = (answer["status"], time.monotonic())
        except Exception as exc:  # surfaced to the engine: what this test says never happens
            self.errors[public_id] = f"{type(exc).__name__}: {exc}"

    async def _run(self) -> None:
        tasks = []
        for index, public_id in enumerate(self.ids):
            tasks.append(asyncio.ensure_future(self._one(public_id)))
            if index % 100 == 99:
                await asyncio.sleep(0.05)  # a ramp, not thousands of SYNs on the listen backlog at once
        await asyncio.gather(*tasks)

    def start(self) -> "Engines":
        self.thread.start()
        return self

    def done(self) -> bool:
        return len(self.answers) + len(self.errors) == len(self.ids)


TS_ENGINES = ROOT / "tests" / "faults" / "typescript_engines.mjs"
TS_DIST = ROOT / "clients" / "typescript" / "dist" / "index.js"


def typescript_engines(url: str, token: str, ids: list[str]) -> subprocess.Popen:
    """The same waits through the TypeScript client, in Node (tests/faults/typescript_engines.mjs)."""
    if not TS_DIST.exists():
        subprocess.run(["npm", "run", "build"], cwd=TS_DIST.parents[1], check=True, capture_output=True)
    node = subprocess.Popen(
        ["node", str(TS_ENGINES), url, token], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    node.stdin.write("\n".join(ids) + "\n")
    node.stdin.close()
    return node


def waiting(node: AsgiServer) -> int:
    """The long-polls the node (one worker) holds now, from its /metrics."""
    try:
        text = requests.get(
            f"{node.url}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10
        ).text
    except requests.RequestException:
        return -1
    line = next(line for line in text.splitlines() if line.startswith("hitl_waiting_engines "))
    return int(float(line.split()[1]))


def decide_all(world, ids: list[str]) -> float:
    with transaction.atomic():
        for approval in ApprovalRequest.objects.filter(public_id__in=ids).select_related("config"):
            approval_decide(approval=approval, user=world["bob"], decision="approve")
    return time.monotonic()


def node(port: int) -> AsgiServer:
    return AsgiServer(port=port, **NODE_ENV)


def terminate(server: AsgiServer) -> float:
    """SIGTERM to gunicorn's master alone (systemd's KillMode=mixed); how long it took to exit."""
    started = time.monotonic()
    os.kill(server.process.pid, signal.SIGTERM)
    server.process.wait(timeout=40)
    server.__exit__()
    return time.monotonic() - started


def test_a_rolling_restart_answers_every_wait_and_surfaces_no_error(world):
    if not (ROOT / "clients" / "typescript" / "node_modules").is_dir():
        pytest.fail("run `npm ci` in clients/typescript (make test does)")
    ids = pending_requests(world, 2_100)
    ids, ts_ids = ids[:2_000], ids[2_000:]  # 2,000 engines in Python (asyncio), 100 in TypeScript
    ports = [free_port(), free_port()]
    nodes = [node(ports[0]).__enter__(), node(ports[1]).__enter__()]
    try:
        with Nginx(ports) as proxy:
            engines = Engines(proxy.url, world["engine_token"], ids).start()
            ts_engines = typescript_engines(proxy.url, world["engine_token"], ts_ids)
            everyone = len(ids) + len(ts_ids)
            wait_for(lambda: sum(map(waiting, nodes)) == everyone, timeout=90, what="every wait held", every=0.5)
            assert min(map(waiting, nodes)) > 500  # spread over both nodes

            for index in range(2):
                held = waiting(nodes[index])
                # Within gunicorn's graceful timeout (30 s): past it the worker is killed and its connections reset.
                assert terminate(nodes[index]) < 30
                nodes[index] = node(ports[index]).__enter__()
                # Its waits answered as they stood (still pending) and asked again, through nginx, elsewhere.
                wait_for(
                    lambda: sum(map(waiting, nodes)) == everyone,
                    timeout=90,
                    what=f"the {held} waits of node {index} to wait again",
                    every=0.5,
                )
            assert not engines.answers and not engines.errors

            decided = decide_all(world, ids + ts_ids)
            wait_for(engines.done, timeout=120, what=lambda: f"every answer ({len(engines.answers)})", every=0.2)
            ts_out = ts_engines.stdout.read()  # its one line, once every wait has ended (at most 240 s)
            ts_engines.wait(timeout=30)
    finally:
        for server in nodes:
            server.__exit__()
    assert engines.errors == {}
    assert {status for status, _ in engines.answers.values()} == {"approved"}
    ts = json.loads(ts_out)
    assert ts["errors"] == {} and set(ts["answers"]) == set(ts_ids) and set(ts["answers"].values()) == {"approved"}
    # Never a reset or a 502: not one wait had to reconnect.
    assert engines.reconnects.records == [] and ts["reconnects"] == []
    delays = sorted(at - decided for _, at in engines.answers.values())
    assert delays[int(len(delays) * 0.99)] < 30  # answered once decided (the bound: a busy shared machine)


def test_a_node_killed_mid_wait_loses_no_engine_and_no_decision(world):
    ids = pending_requests(world, 1_000)
    ports = [free_port(), free_port()]
    nodes = [node(ports[0]).__enter__()]  # the second is down: every wait lands on the first
    try:
        with Nginx(ports) as proxy:
            engines = Engines(proxy.url, world["engine_token"], ids).start()
            wait_for(lambda: waiting(nodes[0]) == len(ids), timeout=90, what="every wait on node 0", every=0.5)
            nodes.append(node(ports[1]).__enter__())

            early = ids[:100]
            decide_all(world, early)  # decided just before the node is lost: racing its wake-ups
            os.killpg(nodes[0].process.pid, signal.SIGKILL)  # master and worker, no word to anyone
            nodes[0].process.wait(timeout=15)
            wait_for(
                lambda: waiting(nodes[1]) == len(ids) - len(engines.answers),
                timeout=120,
                what="the lost node's engines to wait again on the other",
                every=0.5,
            )
            decided = decide_all(world, ids[100:])
            wait_for(engines.done, timeout=120, what=lambda: f"every answer ({len(engines.answers)})", every=0.2)
    finally:
        for server in nodes:
            server.__exit__()
    assert engines.errors == {}
    assert {public_id for public_id, (status, _) in engines.answers.items() if status == "approved"} == set(ids)
    assert ApprovalRequest.objects.filter(public_id__in=ids, status="approved").count() == len(ids)
    late = sorted(at - decided for public_id, (_, at) in engines.answers.items() if public_id not in early)
    assert late[int(len(late) * 0.99)] < 30  # answered once decided (the bound: a busy shared machine)
