"""Section: a batch decision — 100 pending requests, each with an engine long-polling it, decided in one call.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only batch

The portal under gunicorn (bench/server.py); 100 engines each hold `GET /api/v1/approvals/{id}?wait=30`;
a reviewer's token posts `POST /api/v1/approvals/decide` with the 100 ids. Figures: the batch's answer
time (target ≤ 1 s), and the slowest engine's wake-up after its request's decision was committed (
`committed`: when a LISTEN of the bench's own on the decisions' channel hears it, i.e. its commit; target
≤ 100 ms). Rounds: the run's (5 by default).
"""

import statistics
import threading
import time
from typing import TYPE_CHECKING

import requests

if TYPE_CHECKING:
    from bench.harness import Bench

COUNT = 100


def run(bench: "Bench") -> list[dict]:
    """`--only batch`: its own server on the bench's workspace."""
    import os

    from django.db import connection

    from bench.server import Server

    connection.close()
    server = Server(os.environ["BENCH_DATABASE_URL"])
    try:
        return _rounds(bench)
    finally:
        server.stop()


def _rounds(bench: "Bench") -> list[dict]:
    from django.db import connection

    from bench.harness import log
    from bench.server import PORT
    from workspaces.services import token_create

    world = bench.world
    _, reviewer_token = token_create(workspace=world.workspace, user=world.reviewer)
    connection.close()
    base = f"http://127.0.0.1:{PORT}"
    engine = {"Authorization": f"Bearer {world.engine_token}"}
    reviewer = {"Authorization": f"Bearer {reviewer_token}"}
    answers, wakes = [], []
    for round_number in range(bench.rounds):
        log(f"batch: round {round_number + 1}: {COUNT} waiting engines, one batch decision")
        session = requests.Session()
        ids = []
        for i in range(COUNT):
            body = {**world.registration_body(), "run_id": f"batch_{round_number}_{i}"}
            response = session.post(f"{base}/api/v1/approvals", json=body, headers=engine, timeout=30)
            ids.append(response.json()["id"])
        woken: dict[str, float] = {}
        committed = _Listener(set(ids))
        waiters = [threading.Thread(target=_wait, args=(base, engine, public_id, woken)) for public_id in ids]
        for waiter in waiters:
            waiter.start()
        time.sleep(2)  # every wait held by the server before the decision
        started = time.perf_counter()
        response = session.post(
            f"{base}/api/v1/approvals/decide",
            json={"ids": ids, "decision": "approve", "reason": "bench batch"},
            headers=reviewer,
            timeout=60,
        )
        answers.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200 and all(r["status"] == "approved" for r in response.json()["results"])
        for waiter in waiters:
            waiter.join(timeout=40)
        heard = committed.stop()
        assert len(woken) == COUNT, f"{COUNT - len(woken)} engines never woke"
        assert len(heard) == COUNT, f"{COUNT - len(heard)} decisions never heard"
        wakes.append(max((woken[public_id] - heard[public_id]) * 1000 for public_id in ids))
    bench.results["batch"] = {"answer_ms": answers, "slowest_wake_ms": wakes, "count": COUNT}
    return rows(bench.results["batch"])


class _Listener:
    """LISTEN on the decisions' channel (approvals/notify.py): when each request's decision was committed."""

    def __init__(self, ids: set[str]) -> None:
        import os

        import psycopg

        from approvals.notify import CHANNEL

        self.ids, self.heard, self.running = ids, {}, True
        self.connection = psycopg.connect(os.environ["BENCH_DATABASE_URL"], autocommit=True)
        self.connection.execute(f"LISTEN {CHANNEL}")
        self.thread = threading.Thread(target=self._listen, daemon=True)
        self.thread.start()

    def _listen(self) -> None:
        while self.running and len(self.heard) < len(self.ids):
            for notify in self.connection.notifies(timeout=0.5):
                if notify.payload in self.ids:
                    self.heard.setdefault(notify.payload, time.time())

    def stop(self) -> dict[str, float]:
        self.running = False
        self.thread.join(timeout=5)
        self.connection.close()
        return self.heard


def _wait(base: str, headers: dict, public_id: str, woken: dict) -> None:
    response = requests.get(f"{base}/api/v1/approvals/{public_id}?wait=30", headers=headers, timeout=40)
    if response.json().get("status") == "approved":
        woken[public_id] = time.time()


def rows(results: dict) -> list[dict]:
    from bench.report import row

    answer, wake = statistics.median(results["answer_ms"]), statistics.median(results["slowest_wake_ms"])
    return [
        row(f"batch decision of {results['count']}: answer", answer, None, "ms", None, "≤ 1,000 ms", answer <= 1000),
        row(
            f"batch decision of {results['count']}: slowest engine woken after its decision",
            wake,
            None,
            "ms",
            None,
            "≤ 100 ms",
            wake <= 100,
        ),
    ]
