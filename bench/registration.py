"""Section: registration throughput at 1, 8 and 32 concurrent engines, beside the floor's bare INSERT.

The engines' registrations take the fast lane (approvals/api_register.py: no Django request,
middleware or DRF), which the floor's DRF view does not have. One more figure shows the same
registration through Django's view, as a body the lane hands over is registered (a charset
parameter on its Content-Type is enough), beside the same floor: what the lane saves.
"""

import statistics

from bench.harness import Bench, log
from bench.report import load_rows, row
from bench.server import paired

THROUGH_DJANGO = "application/json; charset=utf-8"  # not the fast lane's shape


def run(bench: Bench) -> list[dict]:
    body = bench.world.registration_body()
    results = bench.results["registration"] = {}
    rows = []
    for concurrency in (1, 8, 32):
        log(f"registration at {concurrency} concurrent engine(s): floor and portal, {bench.rounds} rounds")
        results[str(concurrency)] = run_ = paired(
            bench.world,
            floor_path="/api/bench/floor/approvals",
            portal_path="/api/v1/approvals",
            rounds=bench.rounds,
            method="POST",
            concurrency=concurrency,
            duration=bench.duration,
            body=body,
        )
        label = f"registration, {concurrency} engine(s)"
        rows += load_rows(run_, throughput=f"{label}: throughput", latency=label)
    log(f"registration through Django's view, 8 engines: floor and portal, {bench.rounds} rounds")
    results["django_view_8"] = run_ = paired(
        bench.world,
        floor_path="/api/bench/floor/approvals",
        portal_path="/api/v1/approvals",
        rounds=bench.rounds,
        method="POST",
        concurrency=8,
        duration=bench.duration,
        body=body,
        content_type=THROUGH_DJANGO,
    )
    ratio = statistics.median(run_["ratios"])
    rows.append(
        row(
            "registration through Django's view (not the fast lane), 8 engines: throughput",
            run_["portal"]["throughput_rps"],
            run_["floor"]["throughput_rps"],
            " req/s",
            ratio,
            "— (what the lane saves)",
            None,
            spread=(min(run_["ratios"]), max(run_["ratios"])),
        )
    )
    return rows
