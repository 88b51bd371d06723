"""Section: registration throughput at 1, 8 and 32 concurrent engines, beside the floor's bare INSERT.

The engines' registrations are the edge's (edge/calls.py); the floors (bench/floors.py) are Django
+ DRF under gthread 3 × 4 and a bare ASGI app, each doing one INSERT with no authentication.
"""

import os

from bench.harness import Bench, log
from bench.report import load_rows
from bench.server import paired


def run(bench: Bench) -> list[dict]:
    body = bench.world.registration_body()
    results = bench.results["registration"] = {}
    rows = []
    for concurrency in (1, 8, 32):
        log(f"registration at {concurrency} concurrent engine(s): floor and portal, {bench.rounds} rounds")
        results[str(concurrency)] = run_ = paired(
            bench.world,
            path="/api/v1/approvals",
            rounds=bench.rounds,
            method="POST",
            concurrency=concurrency,
            duration=bench.duration,
            body=body,
        )
        label = f"registration, {concurrency} engine(s)"
        rows += load_rows(run_, throughput=f"{label}: throughput", latency=label)
    return rows


def run_alone(bench: Bench) -> list[dict]:
    """`--only registration`: the same pairs on the empty table, the portal and its floors started here."""
    from django.db import connection

    from bench.floors import Floors
    from bench.server import Server

    connection.close()  # the servers' workers get the connections
    url = os.environ["BENCH_DATABASE_URL"]
    server = Server(url)
    try:
        floors = Floors(url)
        try:
            return run(bench)
        finally:
            floors.stop()
    finally:
        server.stop()
