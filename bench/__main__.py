"""`make bench`: throwaway database, a million requests, the portal under gunicorn, each figure beside its floor.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench [--quick]

Drops and recreates that database. Prints a table (figure, floor, ratio, target) and writes
bench/results/latest.json.
"""

import argparse
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg

from bench import policy

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
PORT = int(os.environ.get("BENCH_PORT", "8731"))  # another port when several benches share a machine
GUNICORN = ["--worker-class", "gthread", "--workers", "4", "--threads", "8", "--keep-alive", "30", "--timeout", "60"]


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def recreate_database(url: str) -> None:
    parts = urllib.parse.urlparse(url)
    name = parts.path.lstrip("/")
    admin_url = parts._replace(path="/postgres", scheme="postgresql").geturl()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        )
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(url: str) -> None:
    os.environ["BENCH_DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    import django

    django.setup()


class World:
    """The benchmark's workspace: Pro, a reviewer, an engine key, a published config gating every delete."""

    def __init__(self) -> None:
        from rules.services import config_create, config_publish, config_update, rule_create
        from workspaces.models import ApiToken
        from workspaces.services import member_add, token_create, workspace_create

        self.workspace = workspace_create(slug="bench", plan="pro", name="Bench")
        self.reviewer = member_add(
            workspace=self.workspace, email="reviewer@bench.test", role="reviewer", password="bench-reviewer"
        ).user
        self.config = config_create(workspace=self.workspace, name="Bench agent")
        config_update(config=self.config, pass_information_level="summary")
        self.rule = rule_create(config=self.config, message="Check before deleting")
        self.version = config_publish(config=self.config, user=None, note="bench")
        _, self.engine_token = token_create(workspace=self.workspace, engine_name="bench-engine")
        self.engine_key = ApiToken.objects.get(workspace=self.workspace, kind="engine")

    def registration_body(self) -> dict:
        return {
            "kind": "gate",
            "config_id": self.config.public_id,
            "config_version": self.version.number,
            "rule_id": self.rule.public_id,
            "run_id": "run_bench",
            "thread_id": "thr_bench",
            "caller": "support-agent",
            "target": "crm/customers/42",
            "operation": "delete_record",
            "summary": "Delete customer 42 (duplicate of 41)",
        }

    def seed(self, *, count: int, status: str, tag: str, created_from: datetime, step_ms: int, ttl_s: int) -> None:
        from django.db import connection

        from bench.seed import insert_requests

        with connection.cursor() as cursor:
            insert_requests(
                cursor,
                workspace_id=self.workspace.pk,
                config_id=self.config.pk,
                config_version=self.version.number,
                rule_id=self.rule.public_id,
                engine_key_id=self.engine_key.pk,
                count=count,
                status=status,
                created_from=created_from,
                created_step_ms=step_ms,
                expires_after_s=ttl_s,
                tag=tag,
                decided_by_id=self.reviewer.pk,
                decided_by_email=self.reviewer.email,
            )


def sql(statement: str, params=None) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount


def vacuum() -> None:
    sql("VACUUM ANALYZE approvals_approvalrequest")


# ------------------------------------------------------------------------------------------- pages


def measure_pages(world: World, repeats: int) -> dict:
    """Server time (the whole Django request in-process: middleware, queries, template) and query count."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client()
    client.force_login(world.reviewer)
    figures = {}
    for name, path in (("queue", "/hitl/approvals/"), ("history", "/hitl/approvals/history/")):
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


# ------------------------------------------------------------------------------------------ server


class Server:
    def __init__(self, url: str) -> None:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "BENCH_DATABASE_URL": url}
        env["PGAPPNAME"] = "hitl-bench-server"
        self.log = open(RESULTS / "gunicorn.log", "w")
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "hitl_portal.wsgi",
                "--bind",
                f"127.0.0.1:{PORT}",
                *GUNICORN,
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        import http.client

        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"gunicorn exited with {self.process.returncode}; see bench/results/gunicorn.log")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=5)
                conn.request("GET", "/login/")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                time.sleep(0.2)
        raise SystemExit("gunicorn did not answer within 60 s")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def load(world: World, *, method: str, path: str, concurrency: int, duration: float, **extra) -> dict:
    """One run of the separate load-generator process."""
    command = [
        sys.executable,
        "-m",
        "bench.load",
        "--port",
        str(PORT),
        "--token",
        world.engine_token,
        "--method",
        method,
        "--path",
        path,
        "-c",
        str(concurrency),
        "-d",
        str(duration),
        "--warmup",
        "1",
    ]
    if "body" in extra:
        command += ["--body", json.dumps(extra["body"]), "--idempotency"]
    if "ids_file" in extra:
        command += ["--ids-file", str(extra["ids_file"])]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=duration + 120)
    if out.returncode != 0:
        raise SystemExit(f"load generator failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def paired(world: World, *, floor_path: str, portal_path: str, rounds: int, **load_args) -> dict:
    """Floor and portal back to back, `rounds` times: each round's pair sees the same machine.

    The ratio is the median of the rounds' ratios, so one noisy run on a shared machine moves it
    less; each side's figures are the medians of its rounds. Every other round runs the portal
    first, so neither side always meets what the other left behind (autovacuum after inserts).
    """
    floors, portals = [], []
    for round_number in range(rounds):
        if round_number % 2:
            portals.append(load(world, path=portal_path, **load_args))
            floors.append(load(world, path=floor_path, **load_args))
        else:
            floors.append(load(world, path=floor_path, **load_args))
            portals.append(load(world, path=portal_path, **load_args))
    ratios = [
        portal["throughput_rps"] / floor["throughput_rps"] if floor["throughput_rps"] else 0.0
        for floor, portal in zip(floors, portals, strict=True)
    ]
    return {"floor": _median_run(floors), "portal": _median_run(portals), "ratios": ratios}


def _median_run(runs: list[dict]) -> dict:
    merged = {key: statistics.median(run[key] for run in runs) for key in runs[0] if key.endswith(("_ms", "_rps"))}
    for key in ("requests", "ok", "errors"):
        merged[key] = sum(run[key] for run in runs)
    merged["rounds"] = runs
    return merged


def long_poll_latencies(world: World, public_ids: list[str]) -> dict:
    """From the decision's commit (an on_commit hook right after COMMIT) to the waiting engine's full answer."""
    import http.client

    from django.db import transaction

    from approvals.models import ApprovalRequest
    from approvals.services import approval_decide

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
            approval_decide(approval=approval, user=world.reviewer, decision="approve")
        waiter.join(timeout=15)
        if not answered or body[0].get("status") != "approved":
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


# ------------------------------------------------------------------------------------------- sweep


RESET_SEEDED_PENDING = """
UPDATE approvals_approvalrequest SET status = 'pending', decided_at = NULL, reason = '', decision_action = ''
WHERE public_id LIKE 'apr_pend%%' AND status = 'expired'
"""


def measure_sweep(rounds: int) -> dict:
    """The sweep and one raw UPDATE of the same rows, in alternating rounds; medians, as for the loads."""
    from django.db import transaction

    from approvals.tasks import sweep_overdue

    # The seeded pending requests become overdue (their deadline a minute ago); registrations stay in time.
    sql(
        "UPDATE approvals_approvalrequest SET expires_at = now() - interval '1 minute'"
        " WHERE public_id LIKE 'apr_pend%%'"
    )

    def raw() -> int:
        with transaction.atomic():
            return sql(
                "UPDATE approvals_approvalrequest SET status = 'expired', decided_at = expires_at,"
                " reason = 'Nobody answered before the deadline.', decision_action = ''"
                " WHERE status = 'pending' AND expires_at <= now()"
            )

    timings: dict[str, list[float]] = {"raw": [], "sweep": []}
    counts: dict[str, int] = {}
    for round_number in range(rounds):
        for name in ("sweep", "raw") if round_number % 2 else ("raw", "sweep"):
            sql(RESET_SEEDED_PENDING)
            vacuum()
            t0 = time.perf_counter()
            counts[name] = (sweep_overdue if name == "sweep" else raw)()
            timings[name].append(time.perf_counter() - t0)
    # The long-poll figure decided a few of the seeded requests: both sides expire the same remaining rows.
    return {
        "rows": counts["raw"],
        "raw_rows": counts["raw"],
        "swept_rows": counts["sweep"],
        "raw_s": statistics.median(timings["raw"]),
        "sweep_s": statistics.median(timings["sweep"]),
        "ratios": [sweep / raw for sweep, raw in zip(timings["sweep"], timings["raw"], strict=True)],
        "rounds": timings,
    }


def profile_sweep(out: Path) -> None:
    from pyinstrument import Profiler

    from approvals.tasks import sweep_overdue

    sql(RESET_SEEDED_PENDING)
    vacuum()
    profiler = Profiler()
    profiler.start()
    sweep_overdue()
    profiler.stop()
    out.write_text(profiler.output_text(unicode=True, color=False))


# -------------------------------------------------------------------------------------------- main


def row(figure: str, value, floor, unit: str, ratio, target: str, met, spread=None) -> dict:
    """`spread`: the lowest and highest of the rounds' ratios, where a figure has rounds."""
    return {
        "figure": figure,
        "value": value,
        "floor": floor,
        "unit": unit,
        "ratio": ratio,
        "spread": spread,
        "target": target,
        "met": met,
    }


def fmt(value, unit: str = "") -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.1f}{unit}" if value < 100 else f"{value:,.0f}{unit}"
    return f"{value:,}{unit}"


def print_table(rows: list[dict]) -> str:
    lines = [
        "| figure | value | floor | ratio (rounds' range) | target | met |",
        "|---|---:|---:|---:|---|---|",
    ]
    for r in rows:
        ratio = "—" if r["ratio"] is None else f"{r['ratio']:.2f}×"
        if r.get("spread"):
            ratio += " ({:.2f}–{:.2f})".format(*r["spread"])
        met = {True: "yes", False: "**no**", None: "—"}[r["met"]]
        lines.append(
            f"| {r['figure']} | {fmt(r['value'], r['unit'])} | {fmt(r['floor'], r['unit'])} | {ratio} |"
            f" {r['target']} | {met} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100,000 rows and short runs, to try the harness")
    parser.add_argument("--duration", type=float, default=None, help="seconds per load run (default 5, quick 2)")
    parser.add_argument("--profile", action="store_true", help="pyinstrument the pages and the sweep")
    parser.add_argument("--rounds", type=int, default=None, help="floor/portal pairs per figure (default 5, quick 1)")
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/hitl_bench")
    total, pending = (100_000, 10_000) if args.quick else (1_000_000, 100_000)
    duration = args.duration or (2.0 if args.quick else 5.0)
    rounds = args.rounds or (1 if args.quick else 5)
    RESULTS.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results: dict = {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"cores": os.cpu_count(), "memory_gib": _memory_gib(), "python": platform.python_version()},
        "rows": total,
        "pending": pending,
        "gunicorn": " ".join(GUNICORN),
        "rounds": rounds,
        "missing": [],
    }

    log(f"recreating {urllib.parse.urlparse(url).path.lstrip('/')} and migrating")
    recreate_database(url)
    setup_django(url)
    from django.core.management import call_command
    from django.db import connection

    from bench.floor import FLOOR_TABLE_SQL

    call_command("migrate", verbosity=0)
    sql(FLOOR_TABLE_SQL)
    world = World()
    now = datetime.now(UTC)

    log("pages on a near-empty table (150 pending, 150 decided: each page full, as with the big table)")
    world.seed(
        count=150, status="pending", tag="smallp", created_from=now - timedelta(hours=1), step_ms=1000, ttl_s=86400
    )
    world.seed(
        count=150, status="approved", tag="smalla", created_from=now - timedelta(days=1), step_ms=1000, ttl_s=86400
    )
    vacuum()
    results["pages_small"] = measure_pages(world, repeats=15)
    sql("DELETE FROM approvals_approvalrequest")

    log(f"seeding {total:,} requests ({pending:,} pending) with INSERT … SELECT generate_series")
    t0 = time.perf_counter()
    history = total - pending
    span_ms = int(60 * 86400 * 1000 / history)  # 60 days of history
    world.seed(
        count=int(history * 0.6),
        status="approved",
        tag="appr",
        created_from=now - timedelta(days=61),
        step_ms=span_ms,
        ttl_s=86400,
    )
    world.seed(
        count=int(history * 0.3),
        status="rejected",
        tag="rejd",
        created_from=now - timedelta(days=61),
        step_ms=span_ms,
        ttl_s=86400,
    )
    world.seed(
        count=history - int(history * 0.6) - int(history * 0.3),
        status="expired",
        tag="expd",
        created_from=now - timedelta(days=61),
        step_ms=span_ms,
        ttl_s=86400,
    )
    world.seed(
        count=pending,
        status="pending",
        tag="pend",
        created_from=now - timedelta(hours=12),
        step_ms=max(1, int(12 * 3600 * 1000 / pending)),
        ttl_s=86400,
    )
    vacuum()
    results["seed_s"] = time.perf_counter() - t0
    log(f"seeded in {results['seed_s']:.0f} s")

    log("pages on the big table")
    results["pages_big"] = measure_pages(world, repeats=15)
    if args.profile:
        profile_page(world, "/hitl/approvals/", RESULTS / "profile-queue.txt")
        profile_page(world, "/hitl/approvals/history/", RESULTS / "profile-history.txt")

    with connection.cursor() as cursor:
        cursor.execute("SELECT public_id FROM approvals_approvalrequest WHERE public_id LIKE 'apr_pend%%'")
        ids = [r[0] for r in cursor.fetchall()]
    random.Random(1).shuffle(ids)
    poll_ids, wait_ids = ids[:5000], ids[5000:5050]
    ids_file = RESULTS / "poll-ids.txt"
    ids_file.write_text("\n".join(poll_ids) + "\n")
    connection.close()  # the server's workers get the connections; ours reopens when needed

    log("starting gunicorn: " + " ".join(GUNICORN))
    server = Server(url)
    try:
        body = world.registration_body()
        results["registration"] = {}
        for concurrency in (1, 8, 32):
            log(f"registration at {concurrency} concurrent engine(s): floor and portal, {rounds} rounds")
            results["registration"][str(concurrency)] = paired(
                world,
                floor_path="/bench/floor/approvals",
                portal_path="/api/v1/approvals",
                rounds=rounds,
                method="POST",
                concurrency=concurrency,
                duration=duration,
                body=body,
            )
        results["poll"] = {}
        for concurrency in (8, 32):
            log(f"poll at {concurrency} concurrent engines, {total:,} rows: floor and portal, {rounds} rounds")
            results["poll"][str(concurrency)] = paired(
                world,
                floor_path="/bench/floor/approvals/{id}",
                portal_path="/api/v1/approvals/{id}",
                rounds=rounds,
                method="GET",
                concurrency=concurrency,
                duration=duration,
                ids_file=ids_file,
            )
        log(f"decision → waiting engine through long-poll ({len(wait_ids)} samples)")
        results["long_poll"] = long_poll_latencies(world, wait_ids)
        results["long_poll"]["floor"] = load(
            world, method="GET", path="/bench/floor/approvals/{id}", concurrency=1, duration=duration, ids_file=ids_file
        )
        log("approver policy: registration on a rule with allow_run_grant, without and with a live grant")
        results["policy"] = policy.measure_policy(world, load=load, rounds=rounds, duration=duration)
    finally:
        server.stop()

    log(f"sweep of {pending:,} overdue requests vs one raw UPDATE of the same rows")
    results["sweep"] = measure_sweep(rounds=min(rounds, 3))
    if args.profile:
        profile_sweep(RESULTS / "profile-sweep.txt")
    results["elapsed_s"] = time.monotonic() - started

    rows = summarise(results)
    results["table"] = rows
    table = print_table(rows)
    (RESULTS / "latest.json").write_text(json.dumps(results, indent=2, default=str))
    (RESULTS / "latest.md").write_text(table + "\n")
    print()
    print(table)
    print()
    m = results["machine"]
    log(
        f"{m['cores']} cores, {m['memory_gib']} GiB; {total:,} rows; done in {results['elapsed_s']:.0f} s;"
        " JSON in bench/results/latest.json"
    )


def _load_rows(run: dict, *, throughput: str, latency: str) -> list[dict]:
    """A paired load's rows: throughput beside its floor (the median of the rounds' ratios), then p50 and p99."""
    floor, real = run["floor"], run["portal"]
    ratio = statistics.median(run["ratios"])
    rows = [
        row(
            throughput,
            real["throughput_rps"],
            floor["throughput_rps"],
            " req/s",
            ratio,
            "≥ 0.8× floor",
            ratio >= 0.8 and _clean(real),
            spread=(min(run["ratios"]), max(run["ratios"])),
        )
    ]
    for p in ("p50", "p99"):
        value, floor_value = real[f"{p}_ms"], floor[f"{p}_ms"]
        ratio = value / floor_value if floor_value else None
        rows.append(row(f"{latency}: {p}", value, floor_value, " ms", ratio, "—", None))
    return rows


def summarise(results: dict) -> list[dict]:
    rows = []
    for concurrency, run in results["registration"].items():
        label = f"registration, {concurrency} engine(s)"
        rows += _load_rows(run, throughput=f"{label}: throughput", latency=label)
    for concurrency, run in results["poll"].items():
        label = f"poll, {concurrency} engines"
        rows += _load_rows(run, throughput=f"{label}, {results['rows']:,} rows: throughput", latency=label)
    lp = results["long_poll"]
    floor_p95 = lp["floor"]["p95_ms"]
    for p in ("p50", "p95"):
        value = lp[f"{p}_ms"]
        met = None if p == "p50" else (value is not None and value <= 50 and not lp["failed"])
        rows.append(
            row(
                f"decision → waiting engine (long-poll): {p}",
                value,
                lp["floor"][f"{p}_ms"],
                " ms",
                value / lp["floor"][f"{p}_ms"] if value and floor_p95 else None,
                "≤ 50 ms" if p == "p95" else "—",
                met,
            )
        )
    for page in ("queue", "history"):
        small, big = results["pages_small"].get(page, {}), results["pages_big"].get(page, {})
        if "error" in small or "error" in big:
            results["missing"].append(f"{page} page: {small.get('error') or big.get('error')}")
            continue
        ratio = big["server_ms_median"] / small["server_ms_median"]
        rows.append(
            row(
                f"{page} page, {results['rows']:,} rows vs near-empty: server time",
                big["server_ms_median"],
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
                big["queries"],
                small["queries"],
                "",
                big["queries"] / small["queries"] if small["queries"] else None,
                "constant",
                big["queries"] == small["queries"],
            )
        )
    rows += policy.policy_rows(results["policy"], row)
    sw = results["sweep"]
    ratio = statistics.median(sw["ratios"])
    rows.append(
        row(
            f"sweep of {sw['rows']:,} overdue requests vs one raw UPDATE",
            sw["sweep_s"] * 1000,
            sw["raw_s"] * 1000,
            " ms",
            ratio,
            "≤ 2× raw UPDATE",
            ratio <= 2 and sw["swept_rows"] == sw["raw_rows"],
            spread=(min(sw["ratios"]), max(sw["ratios"])),
        )
    )
    return rows


def _clean(run: dict) -> bool:
    """A run counts only if every measured answer was a 2xx and no connection failed."""
    return run["errors"] == 0 and run["ok"] == run["requests"]


def _memory_gib() -> int | None:
    try:
        with open("/proc/meminfo") as meminfo:
            kib = int(meminfo.readline().split()[1])
        return round(kib / 1024 / 1024)
    except (OSError, ValueError, IndexError):
        return None


if __name__ == "__main__":
    main()
