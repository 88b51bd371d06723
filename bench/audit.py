"""`python -m bench --section audit`: what the audit log and the insights page cost.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --section audit [--quick]

- the insights page's server time with 1,000,000 requests against a near-empty table (≤ 2×),
  and its query count (equal);
- `hitl audit verify` over 1,000,000 records (≤ 60 s).

Drops and recreates that database. Writes bench/results/audit.json.

`python -m bench --section insights [--quick]` measures the insights page alone (run_insights):
the same two tables, without the throughput rounds and the chain. Writes bench/results/insights.json.
"""

import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

RESULTS_NAME = "audit.json"
# Not the harness's shared default port: another benchmark may be serving there on this machine.
PORT = int(os.environ.get("BENCH_AUDIT_PORT", "18713"))


def _insights_page(world, repeats: int) -> dict:
    """Server time in-process: computed afresh (cache cleared before each view) and from the minute's cache.

    The first view rolls up the window's closed hours (cold_ms); the rest read the rollups and
    aggregate the current hour live — what any view after the schedule's run does.
    """
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(world.reviewer.__class__.objects.get(email="admin@bench.test"))
    cache.clear()
    started = time.perf_counter()
    first = client.get("/hitl/insights/")
    cold_ms = (time.perf_counter() - started) * 1000
    assert first.status_code == 200, first.status_code
    fresh, cached = [], []
    for _ in range(repeats):
        cache.clear()
        started = time.perf_counter()
        client.get("/hitl/insights/")
        fresh.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        client.get("/hitl/insights/")
        cached.append((time.perf_counter() - started) * 1000)
    cache.clear()
    with CaptureQueriesContext(connection) as queries:
        client.get("/hitl/insights/")
    return {
        "cold_ms": cold_ms,
        "median_ms": statistics.median(fresh),
        "p90_ms": statistics.quantiles(fresh, n=10)[-1],
        "cached_ms": statistics.median(cached),
        "queries": len(queries),
    }


def _seed_near_empty(world, now: datetime) -> None:
    """150 pending, 150 decided three days ago, 50 decided in the last half hour (the live part)."""
    world.seed(
        count=150, status="pending", tag="smallp", created_from=now - timedelta(hours=1), step_ms=1000, ttl_s=86400
    )
    world.seed(
        count=150, status="approved", tag="smalla", created_from=now - timedelta(days=3), step_ms=1000, ttl_s=86400
    )
    world.seed(
        count=50, status="approved", tag="smalln", created_from=now - timedelta(minutes=32), step_ms=30_000, ttl_s=86400
    )


def _seed_big(world, total: int, now: datetime) -> None:
    """`total` requests: 60 days of history resolving right up to now (each status spread over all of it,
    so every hour of the window, the current one included, has ~560 decisions), and a tenth pending
    from the last 12 hours. Decided a minute after registration; expired an hour after."""
    from bench.seed import seed_pending

    history, pending = total - total // 10, total // 10
    span_ms = 60 * 86400 * 1000 - 3 * 60 * 1000  # ends 3 minutes ago: decided 1 minute later
    for status, share, tag in (("approved", 0.6, "appr"), ("rejected", 0.3, "rejd")):
        count = int(history * share)
        world.seed(
            count=count,
            status=status,
            tag=tag,
            created_from=now - timedelta(days=60),
            step_ms=span_ms // count,
            ttl_s=86400,
        )
    count = history - int(history * 0.6) - int(history * 0.3)
    world.seed(
        count=count,
        status="expired",
        tag="expd",
        created_from=now - timedelta(days=60),
        step_ms=(span_ms - 3600 * 1000) // count,
        ttl_s=3600,
    )
    seed_pending(world, count=pending, now=now)


def _fresh_world(url: str, *, section: str):
    """A recreated, migrated database with the benchmark's workspace and an admin to view insights."""
    from bench.harness import World, log, recreate_database, setup_django

    log(f"{section}: recreating {url.rsplit('/', 1)[-1]} and migrating")
    recreate_database(url)
    setup_django(url)
    from django.core.management import call_command

    from workspaces.services import member_add

    call_command("migrate", verbosity=0)
    world = World()
    member_add(workspace=world.workspace, email="admin@bench.test", role="admin")
    return world


def _clear_for_big_table() -> None:
    """The near-empty side's pending requests and every rollup gone: the big table's first view rolls up again."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM approvals_approvalrequest WHERE status = 'pending'")
        for table in ("rollupmark", "hourlyrollup", "hourlytimes", "dailypercentiles"):
            cursor.execute(f"DELETE FROM insights_{table}")


def _insights_near_empty(world, now: datetime, *, repeats: int) -> dict:
    """The insights page over a near-empty table (seeded here)."""
    from bench.harness import log, vacuum

    log("insights page, near-empty table (150 pending, 200 decided)")
    _seed_near_empty(world, now)
    vacuum()
    timing = _insights_page(world, repeats=repeats)
    log(f"  insights near-empty: {timing}")
    return timing


def _insights_big(world, total: int, now: datetime, *, repeats: int) -> dict:
    """The insights page over `total` requests of 60 days (the table emptied and seeded here)."""
    from bench.harness import log, vacuum

    _clear_for_big_table()
    log(f"insights page: seeding {total:,} requests over 60 days")
    _seed_big(world, total, now)
    vacuum()
    timing = _insights_page(world, repeats=repeats)
    log(f"  insights {total:,}: {timing}")
    return timing


def run_insights(*, quick: bool) -> dict:
    """The insights page alone: near-empty, then `total` requests; uncached, cached, first view, queries."""
    from bench.harness import RESULTS

    url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/hitl_bench")
    total = 100_000 if quick else 1_000_000
    RESULTS.mkdir(parents=True, exist_ok=True)
    results: dict = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "rows": total}
    world = _fresh_world(url, section="insights")
    now = datetime.now(UTC)
    results["insights_small"] = _insights_near_empty(world, now, repeats=25)
    results["insights_big"] = _insights_big(world, total, now, repeats=25)
    results["table"] = summarise_insights(results, total)
    (RESULTS / "insights.json").write_text(json.dumps(results, indent=2, default=str))
    print()
    for line in results["table"]:
        print(line)
    return results


def _write_chain(workspace_id: int, count: int) -> None:
    """`count` records chained exactly as audit/chain.py says, COPYed in (the append path would take hours)."""
    from django.db import connection

    from audit.chain import canonical

    prev = "0" * 64
    start = datetime.now(UTC) - timedelta(days=60)
    with connection.cursor() as cursor:
        copy_sql = (
            "COPY audit_auditrecord (workspace_id, seq, at, actor, action, object, data, prev_hash, hash) FROM STDIN"
        )
        with cursor.cursor.copy(copy_sql) as copy:
            for seq in range(1, count + 1):
                at = start + timedelta(milliseconds=seq * 5)
                record = {
                    "seq": seq,
                    "at": at.strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
                    "actor": "engine:bench-engine",
                    "action": "approval.registered",
                    "object": f"apr_verify{seq:010d}",
                    "data": {"config_id": "cfg_bench", "run_id": f"run_{seq}", "target": f"crm/customers/{seq}"},
                    "prev_hash": prev,
                }
                digest = hashlib.sha256((prev + canonical(record)).encode()).hexdigest()
                copy.write_row(
                    (
                        workspace_id,
                        seq,
                        at,
                        record["actor"],
                        record["action"],
                        record["object"],
                        canonical(record["data"]),
                        prev,
                        digest,
                    )
                )
                prev = digest
        cursor.execute(
            "INSERT INTO audit_audithead (workspace_id, seq, hash) VALUES (%s, %s, %s) "
            "ON CONFLICT (workspace_id) DO UPDATE SET seq = EXCLUDED.seq, hash = EXCLUDED.hash",
            [workspace_id, count, prev],
        )


def run(*, quick: bool, rounds: int | None, duration: float | None) -> dict:
    from bench.harness import RESULTS, log

    url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/hitl_bench")
    total = 100_000 if quick else 1_000_000
    rounds = rounds or (2 if quick else 4)
    duration = duration or (2.0 if quick else 4.0)
    RESULTS.mkdir(parents=True, exist_ok=True)
    results: dict = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "rows": total, "rounds": rounds}
    world = _fresh_world(url, section="audit")
    from django.db import connection

    now = datetime.now(UTC)

    results["insights_small"] = _insights_near_empty(world, now, repeats=15)
    connection.close()

    results["insights_big"] = _insights_big(world, total, datetime.now(UTC), repeats=15)

    log(f"audit: writing a {total:,}-record chain, then hitl audit verify")
    from workspaces.services import workspace_create

    verify_ws = workspace_create(slug="verify", plan="pro")
    started = time.perf_counter()
    _write_chain(verify_ws.pk, total)
    results["chain_write_s"] = time.perf_counter() - started
    connection.close()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "BENCH_DATABASE_URL": url}
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "manage.py", "hitl", "audit", "verify", "--workspace", "verify"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    results["verify"] = {
        "seconds": time.perf_counter() - started,
        "exit": out.returncode,
        "output": (out.stdout + out.stderr).strip(),
    }

    results["table"] = summarise(results, total)
    (RESULTS / RESULTS_NAME).write_text(json.dumps(results, indent=2, default=str))
    print()
    for line in results["table"]:
        print(line)
    return results


def summarise(results: dict, total: int) -> list[str]:
    lines = ["| figure | value | against | ratio | target |", "|---|---|---|---|---|"]
    lines += summarise_insights(results, total)[2:]
    v = results["verify"]
    lines.append(f"| hitl audit verify, {total:,} records | {v['seconds']:.1f} s | | | ≤ 60 s ({v['output']}) |")
    return lines


def summarise_insights(results: dict, total: int) -> list[str]:
    small, big = results["insights_small"], results["insights_big"]
    lines = ["| figure | value | against | ratio | target |", "|---|---|---|---|---|"]
    ratio = big["median_ms"] / small["median_ms"]
    lines.append(
        f"| insights page, {total:,} requests, computed (uncached) | {big['median_ms']:.0f} ms "
        f"(p90 {big['p90_ms']:.0f}), {big['queries']} queries | {small['median_ms']:.0f} ms "
        f"(p90 {small['p90_ms']:.0f}), {small['queries']} queries near-empty | {ratio:.2f}× | ≤ 2×, same queries |"
    )
    ratio = big["cached_ms"] / small["cached_ms"]
    lines.append(
        f"| insights page, {total:,} requests, within the minute's cache | {big['cached_ms']:.0f} ms "
        f"| {small['cached_ms']:.0f} ms near-empty | {ratio:.2f}× | ≤ 2× |"
    )
    lines.append(
        f"| insights page, first view (rolls up the window's closed hours) | {big['cold_ms']:.0f} ms "
        f"| {small['cold_ms']:.0f} ms near-empty | | |"
    )
    return lines
