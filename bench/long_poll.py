"""Section: from a decision's commit to the waiting engine's full answer (GET …?wait=10), beside a plain
poll of the Django floor."""

import http.client
import json
import threading
import time

from bench.harness import Bench, World, log
from bench.report import row
from bench.server import DJANGO_FLOOR_PORT, PORT, load

SAMPLES = 50
TARGET_MS = 20  # p95, from the decision's COMMIT to the engine's whole answer


def run(bench: Bench) -> list[dict]:
    wait_ids = bench.pending_ids[5000 : 5000 + SAMPLES]  # the poll section polls the first 5,000
    log(f"decision → waiting engine through long-poll ({len(wait_ids)} samples)")
    lp = bench.results["long_poll"] = latencies(bench.world, wait_ids)
    lp["floor"] = load(
        bench.world,
        method="GET",
        path="/api/v1/approvals/{id}",
        port=DJANGO_FLOOR_PORT,
        concurrency=1,
        duration=bench.duration,
        ids_file=bench.ids_file,
    )
    rows = []
    floor_p95 = lp["floor"]["p95_ms"]
    for p in ("p50", "p95"):
        value = lp[f"{p}_ms"]
        met = None if p == "p50" else (value is not None and value <= TARGET_MS and not lp["failed"])
        rows.append(
            row(
                f"decision → waiting engine (long-poll): {p}",
                value,
                lp["floor"][f"{p}_ms"],
                " ms",
                value / lp["floor"][f"{p}_ms"] if value and floor_p95 else None,
                f"≤ {TARGET_MS} ms" if p == "p95" else "—",
                met,
            )
        )
    return rows


def latencies(
    world: World, public_ids: list[str], *, decision: str = "approve", answers: dict | None = None, expected: str = ""
) -> dict:
    """From the decision's commit (an on_commit hook right after COMMIT) to the waiting engine's full answer.

    A question's answer is measured the same way (bench/questions.py: decision "answer", its answers).
    """
    expected = expected or "approved"
    from django.db import transaction

    from approvals.models import ApprovalRequest
    from approvals.review.decide import approval_decide

    samples, failures = [], []
    for public_id in public_ids:
        answered: list[float] = []
        body: list[dict] = []

        def engine(public_id: str = public_id, answered: list = answered, body: list = body) -> None:
            conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
            conn.request(
                "GET",
                f"/api/v1/approvals/{public_id}?wait=10",
                headers={"Authorization": f"Bearer {world.engine_token}"},
            )
            response = conn.getresponse()
            raw = response.read()
            answered.append(time.perf_counter())
            body.append(json.loads(raw) if response.status == 200 else {"http": response.status})

        waiter = threading.Thread(target=engine)
        waiter.start()
        time.sleep(0.25)  # the engine is waiting (its LISTEN is up) before anyone decides
        committed: list[float] = []
        approval = ApprovalRequest.objects.select_related("config").get(public_id=public_id)
        with transaction.atomic():
            transaction.on_commit(lambda: committed.append(time.perf_counter()))  # noqa: B023
            approval_decide(approval=approval, user=world.reviewer, decision=decision, answers=answers)
        waiter.join(timeout=15)
        if not answered or body[0].get("status") != expected:
            failures.append({"id": public_id, "answer": body[0] if body else None})
            continue
        samples.append(answered[0] - committed[0])
    samples.sort()
    return {
        "samples": len(samples),
        "failures": failures[:5],
        "failed": len(failures),
        "p50_ms": samples[len(samples) // 2] * 1000 if samples else None,
        "p95_ms": samples[int(0.95 * (len(samples) - 1))] * 1000 if samples else None,
        "max_ms": samples[-1] * 1000 if samples else None,
    }
