"""Section: the queue and history pages on the big table against a near-empty one (server time, queries)."""

import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.harness import RESULTS, Bench, World, log, sql, vacuum
from bench.report import row

PAGES = (("queue", "/hitl/approvals/"), ("history", "/hitl/approvals/history/"))


def near_empty(bench: Bench) -> list[dict]:
    """Before the big seed: 150 pending and 150 decided requests (each page full, as with the big table)."""
    log("pages on a near-empty table (150 pending, 150 decided: each page full, as with the big table)")
    now = datetime.now(UTC)
    world = bench.world
    world.seed(
        count=150, status="pending", tag="smallp", created_from=now - timedelta(hours=1), step_ms=1000, ttl_s=86400
    )
    world.seed(
        count=150, status="approved", tag="smalla", created_from=now - timedelta(days=1), step_ms=1000, ttl_s=86400
    )
    vacuum()
    bench.results["pages_small"] = measure_pages(world, repeats=15)
    # Decided requests are final: triggers refuse their DELETE (approvals/migrations/0007) and their
    # TRUNCATE (audit/migrations/0004); the benchmark's own throwaway rows go with the triggers off.
    sql(
        "SET session_replication_role = replica; TRUNCATE approvals_approvalrequest CASCADE; "
        "SET session_replication_role = DEFAULT"
    )
    return []


def big(bench: Bench) -> list[dict]:
    log("pages on the big table")
    bench.results["pages_big"] = measure_pages(bench.world, repeats=15)
    if bench.args.profile:
        for name, path in PAGES:
            profile_page(bench.world, path, RESULTS / f"profile-{name}.txt")
    rows = []
    for page, _ in PAGES:
        small, large = bench.results["pages_small"].get(page, {}), bench.results["pages_big"].get(page, {})
        if "error" in small or "error" in large:
            bench.results["missing"].append(f"{page} page: {small.get('error') or large.get('error')}")
            continue
        ratio = large["server_ms_median"] / small["server_ms_median"]
        rows.append(
            row(
                f"{page} page, {bench.total:,} rows vs near-empty: server time",
                large["server_ms_median"],
                small["server_ms_median"],
                " ms",
                ratio,
                "≤ 2× near-empty",
                ratio <= 2,
            )
        )
        rows.append(
            row(
                f"{page} page: queries",
                large["queries"],
                small["queries"],
                "",
                large["queries"] / small["queries"] if small["queries"] else None,
                "constant",
                large["queries"] == small["queries"],
            )
        )
    return rows


def measure_pages(world: World, repeats: int) -> dict:
    """Server time (the whole Django request in-process: middleware, queries, template) and query count."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(world.reviewer)
    figures = {}
    for name, path in PAGES:
        times, queries, size = [], 0, 0
        for i in range(repeats + 2):
            with CaptureQueriesContext(connection) as captured:
                t0 = time.perf_counter()
                response = client.get(path)
                elapsed = time.perf_counter() - t0
            if response.status_code != 200:
                figures[name] = {"error": f"{path} answered {response.status_code}"}
                break
            if i >= 2:  # two warm-ups: templates compiled, connection open
                times.append(elapsed)
            queries, size = len(captured.captured_queries), len(response.content)
        else:
            figures[name] = {
                "server_ms_median": statistics.median(times) * 1000,
                "server_ms_p95": sorted(times)[int(0.95 * (len(times) - 1))] * 1000,
                "queries": queries,
                "bytes": size,
            }
    return figures


def profile_page(world: World, path: str, out: Path) -> None:
    from django.test import Client
    from pyinstrument import Profiler

    client = Client()
    client.force_login(world.reviewer)
    client.get(path)
    profiler = Profiler()
    profiler.start()
    for _ in range(5):
        client.get(path)
    profiler.stop()
    out.write_text(profiler.output_text(unicode=True, color=False))
