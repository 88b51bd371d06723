"""The dry run of a draft on the big table (bench section `simulate`; API.md, "Policy").

On the million stored requests: the draft gives the bench rule a typical condition (it reads
`caller` and `operation`) and adds a shadow rule with a month of counts; `config_simulate` of the
last 30 days must answer within 5 s. Then registration throughput with dry runs running beside it
against registration alone: a dry run is a plain SELECT (no row locks), so it must not slow
registration beyond the CPU it takes (target ≥ 0.8× on this 2-core machine, where the two share cores).

    BENCH_DATABASE_URL=postgres://…/hitl_bench_sim python -m bench.simulate [--rows 20000]

runs this section alone on a fresh database; `python -m bench` runs it beside the others.
"""

import statistics
import threading
import time

CONDITION = 'caller != "svc-cleanup" && operation == "delete_record"'
DAYS = 30
TARGET_S = 5.0


def setup_draft(world) -> None:
    """The draft the admin would dry-run: a condition on the bench rule, and a month's shadow rule made a gate."""
    import datetime

    from django.utils import timezone

    from rules.models import RuleDayCount
    from rules.services import rule_create, rule_update

    rule_update(rule=world.rule, condition=CONDITION)
    # Its counts are as a shadow rule kept them; the draft makes it a gate, so they are newly asked.
    shadow = rule_create(config=world.config, kind="worker", match="*", mode="gate", order=30)
    today = timezone.now().date()
    RuleDayCount.objects.bulk_create(
        RuleDayCount(
            config=world.config,
            rule_id=shadow.public_id,
            day=today - datetime.timedelta(days=n),
            kind="shadow",
            count=300 + n,
        )
        for n in range(DAYS)
    )


def time_simulations(world, *, rounds: int) -> dict:
    from rules.simulate import config_simulate

    seconds, result = [], None
    for _ in range(rounds):
        started = time.perf_counter()
        result = config_simulate(config=world.config, days=DAYS)
        seconds.append(time.perf_counter() - started)
    return {"seconds": seconds, "median_s": statistics.median(seconds), "total": result["total"]}


def registration_beside_simulations(world, *, load, duration: float) -> dict:
    """Registration throughput alone, then with dry runs looping in this process for the same time."""
    from django.db import connection

    from rules.simulate import config_simulate

    body = world.registration_body()
    alone = load(world, method="POST", path="/api/v1/approvals", concurrency=8, duration=duration, body=body)
    stop, runs = threading.Event(), []

    def simulate() -> None:
        try:
            while not stop.is_set():
                config_simulate(config=world.config, days=DAYS)
                runs.append(1)
        finally:
            connection.close()

    thread = threading.Thread(target=simulate)
    thread.start()
    try:
        beside = load(world, method="POST", path="/api/v1/approvals", concurrency=8, duration=duration, body=body)
    finally:
        stop.set()
        thread.join()
    return {
        "alone_rps": alone["throughput_rps"],
        "beside_rps": beside["throughput_rps"],
        "ratio": beside["throughput_rps"] / alone["throughput_rps"] if alone["throughput_rps"] else None,
        "simulations": len(runs),
    }


def simulate_rows(result: dict, row) -> list[dict]:
    timing, beside = result["timing"], result["beside"]
    rows = [
        row(
            f"dry run of a draft, {DAYS} days of {result['rows']:,} stored requests",
            timing["median_s"],
            TARGET_S,
            " s",
            timing["median_s"] / TARGET_S,
            "≤ 5 s",
            timing["median_s"] <= TARGET_S,
        )
    ]
    if beside is not None:
        rows.append(
            row(
                "registration while dry runs run vs alone (8 engines)",
                beside["beside_rps"],
                beside["alone_rps"],
                " req/s",
                beside["ratio"],
                "≥ 0.8× (no lock; shares 2 cores)",
                beside["ratio"] is not None and beside["ratio"] >= 0.8,
            )
        )
    return rows


def run(bench) -> list[dict]:
    """The section as `python -m bench` runs it (server up, on the big table)."""
    from bench.harness import log
    from bench.report import row
    from bench.server import load

    log(f"dry run of a draft: {DAYS} days of the big table, then registration beside it")
    setup_draft(bench.world)
    result = bench.results["simulate"] = {
        "rows": bench.total,
        "timing": time_simulations(bench.world, rounds=bench.rounds),
        "beside": registration_beside_simulations(bench.world, load=load, duration=bench.duration),
    }
    return simulate_rows(result, row)


def main() -> None:
    import argparse
    import json
    import os
    import urllib.parse
    from datetime import UTC, datetime

    from bench.harness import RESULTS, World, log, recreate_database, setup_django
    from bench.report import row, table

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=20_000, help="stored requests to seed (make bench: 1,000,000)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/hitl_bench")
    RESULTS.mkdir(parents=True, exist_ok=True)
    log(f"recreating {urllib.parse.urlparse(url).path.lstrip('/')} and migrating")
    recreate_database(url)
    setup_django(url)
    from django.core.management import call_command

    from bench.seed import seed_history

    call_command("migrate", verbosity=0)
    world = World()
    log(f"seeding {args.rows:,} requests")
    seed_history(world, total=args.rows, pending=args.rows // 10, now=datetime.now(UTC))
    setup_draft(world)
    result = {"rows": args.rows, "timing": time_simulations(world, rounds=args.rounds), "beside": None}
    (RESULTS / "simulate.json").write_text(json.dumps(result, indent=2, default=str))
    print(table(simulate_rows(result, row)))
    print(json.dumps(result["timing"]))


if __name__ == "__main__":
    main()
