"""Section: a plain poll of one request at 1, 8 and 32 concurrent engines on the big table,
beside the floors' SELECT."""

from bench.harness import Bench, log
from bench.report import load_rows
from bench.server import paired


def run(bench: Bench) -> list[dict]:
    results = bench.results["poll"] = {}
    rows = []
    for concurrency in (1, 8, 32):
        log(f"poll at {concurrency} concurrent engines, {bench.total:,} rows: floor and portal, {bench.rounds} rounds")
        results[str(concurrency)] = run_ = paired(
            bench.world,
            path="/api/v1/approvals/{id}",
            rounds=bench.rounds,
            method="GET",
            concurrency=concurrency,
            duration=bench.duration,
            ids_file=bench.ids_file,
        )
        label = f"poll, {concurrency} engine(s)"
        rows += load_rows(run_, throughput=f"{label}, {bench.total:,} rows: throughput", latency=label)
    return rows
