"""`make bench`: throwaway database, a million requests, the portal under gunicorn, each figure beside its floor.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench [--quick]

Drops and recreates that database. Prints a table (figure, floor, ratio, target) and writes
bench/results/latest.json.

A section is one module with one function `(bench: Bench) -> table rows` (see bench/harness.py);
add yours to the list of the phase it needs below.
"""

import argparse
import json
import os
import platform
import time
import urllib.parse
from datetime import UTC, datetime

from bench import (
    adapters,
    audit,
    batch,
    cluster,
    coding_agents,
    conditions,
    long_poll,
    notify,
    outbox,
    outbox_burst,
    pages,
    policy,
    poll,
    push,
    questions,
    receipts,
    registration,
    simulate,
    sweep,
    telegram,
    typescript,
)
from bench.floors import Floors
from bench.harness import RESULTS, Bench, Section, World, log, recreate_database, setup_django, sql
from bench.report import row, table
from bench.seed import seed_big_table
from bench.server import GUNICORN, Server

# Before the million rows are seeded (the pages' near-empty figures).
ON_EMPTY_TABLE: list[Section] = [pages.near_empty]
# On the million rows, in-process.
ON_BIG_TABLE: list[Section] = [pages.big, receipts.run]
# On the million rows, with the portal under gunicorn (bench/server.py: `load`, `paired`).
WITH_SERVER: list[Section] = [
    registration.run,
    poll.run,
    long_poll.run,
    adapters.run,
    policy.run,
    conditions.run,
    simulate.run,
    questions.run,
    typescript.run,
    coding_agents.run,
]
# After the server has stopped (sections that change many rows).
AFTER_SERVER: list[Section] = [sweep.run, notify.run, push.run, telegram.run, outbox.run]
# `--only NAME`: that section alone on an empty table (it starts what it needs), to try it quickly.
ALONE: dict[str, Section] = {
    "batch": batch.run,
    "cluster": cluster.run,
    "coding-agents": coding_agents.run_alone,
    "notify": notify.run,
    "outbox": outbox.run,
    "outbox-burst": outbox_burst.run,
    "push": push.run,
    "telegram": telegram.run,
    "questions": questions.run_alone,
    "receipts": receipts.run,
    "registration": registration.run_alone,
}


def main() -> None:
    args = parse_args()
    if args.section == "audit":  # its own run: it restarts the server with the audit log on and off
        return audit.run(quick=args.quick, rounds=args.rounds, duration=args.duration)
    if args.section == "insights":  # the insights page alone (part of the audit section)
        return audit.run_insights(quick=args.quick)
    url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/hitl_bench")
    if args.waiting:  # its own run: servers side by side, thousands of waits (bench/waiting.py)
        from bench.waiting import run_waiting

        return run_waiting(url, servers=args.servers.split(","), levels=args.levels, hold_s=args.duration or 20)
    started = time.monotonic()
    RESULTS.mkdir(parents=True, exist_ok=True)
    log(f"recreating {urllib.parse.urlparse(url).path.lstrip('/')} and migrating")
    recreate_database(url)
    setup_django(url)
    bench = prepare(args)
    if args.only:
        rows = ALONE[args.only](bench)
        bench.results["elapsed_s"] = time.monotonic() - started
        return report(bench, rows)

    rows = run_sections(bench, ON_EMPTY_TABLE)
    seed_big_table(bench)
    rows += run_sections(bench, ON_BIG_TABLE)
    from django.db import connection

    connection.close()  # the server's workers get the connections; ours reopens when needed
    log("starting gunicorn: " + " ".join(GUNICORN) + "; and the two floors (bench/floors.py)")
    server = Server(url)
    try:
        floors = Floors(url)
        try:
            rows += run_sections(bench, WITH_SERVER)
        finally:
            floors.stop()
    finally:
        server.stop()
    rows += run_sections(bench, AFTER_SERVER)
    bench.results["elapsed_s"] = time.monotonic() - started
    report(bench, rows)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="100,000 rows and short runs, to try the harness")
    parser.add_argument("--duration", type=float, default=None, help="seconds per load run (default 5, quick 2)")
    parser.add_argument("--profile", action="store_true", help="pyinstrument the pages and the sweep")
    parser.add_argument("--rounds", type=int, default=None, help="floor/portal pairs per figure (default 5, quick 1)")
    parser.add_argument(
        "--section",
        choices=["all", "audit", "insights"],
        default="all",
        help="audit: bench/audit.py alone; insights: its insights page only",
    )
    parser.add_argument("--waiting", action="store_true", help="only the waiting-engines section (bench/waiting.py)")
    parser.add_argument("--servers", default="deployed", help="--waiting: servers (bench/waiting.py)")
    parser.add_argument("--levels", default=[100, 1000, 3000, 10000], type=lambda v: [int(x) for x in v.split(",")])
    parser.add_argument("--only", choices=sorted(ALONE), help="run one section alone (see ALONE)")
    return parser.parse_args()


def prepare(args: argparse.Namespace) -> Bench:
    """Migrate, create the floor's table and the benchmark's workspace."""
    from django.core.management import call_command

    from bench.floor import FLOOR_TABLE_SQL

    call_command("migrate", verbosity=0)
    sql(FLOOR_TABLE_SQL)
    total, pending = (100_000, 10_000) if args.quick else (1_000_000, 100_000)
    rounds = args.rounds or (1 if args.quick else 5)
    return Bench(
        args=args,
        world=World(),
        total=total,
        pending=pending,
        duration=args.duration or (2.0 if args.quick else 5.0),
        rounds=rounds,
        results={
            "when": datetime.now(UTC).isoformat(timespec="seconds"),
            "machine": {"cores": os.cpu_count(), "memory_gib": _memory_gib(), "python": platform.python_version()},
            "rows": total,
            "pending": pending,
            "gunicorn": " ".join(GUNICORN),
            "rounds": rounds,
            "missing": [],
        },
    )


def run_sections(bench: Bench, sections: list[Section]) -> list[dict]:
    """Each section's rows; one that fails is a row saying so, and the run goes on to the others."""
    rows = []
    for section in sections:
        try:
            rows += section(bench)
        except (Exception, SystemExit) as failed:  # noqa: BLE001 — a figure not taken is reported, not fatal
            name = f"{section.__module__.removeprefix('bench.')}.{section.__name__}"
            log(f"{name} failed: {failed}")
            bench.results["missing"].append({"section": name, "error": str(failed)[:300]})
            rows.append(row(f"{name}: not measured ({str(failed)[:120]})", None, None, "", None, "—", False))
    return rows


def report(bench: Bench, rows: list[dict]) -> None:
    results = bench.results
    results["table"] = rows
    text = table(rows)
    (RESULTS / "latest.json").write_text(json.dumps(results, indent=2, default=str))
    (RESULTS / "latest.md").write_text(text + "\n")
    print()
    print(text)
    print()
    m = results["machine"]
    log(
        f"{m['cores']} cores, {m['memory_gib']} GiB; {bench.total:,} rows; done in {results['elapsed_s']:.0f} s;"
        " JSON in bench/results/latest.json"
    )


def _memory_gib() -> int | None:
    try:
        with open("/proc/meminfo") as meminfo:
            kib = int(meminfo.readline().split()[1])
        return round(kib / 1024 / 1024)
    except (OSError, ValueError, IndexError):
        return None


if __name__ == "__main__":
    main()
