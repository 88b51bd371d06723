"""A rule condition's cost on the registration hot path (bench section `conditions`; API.md, "Policy").

Two kinds of registration, alternating in rounds on the same server and database:
- plain: the bench rule, no condition;
- conditioned: a rule with a typical condition (`arguments`-free, reading caller and operation; true
  for the call, so the request is stored like a plain one) — target ≥ 0.9× plain.

    BENCH_DATABASE_URL=postgres://…/hitl_bench_cond python -m bench.conditions [--duration 3] [--rounds 3]

runs this section alone on a fresh database; `python -m bench` runs it beside the others.
"""

import statistics

KINDS = ("plain", "conditioned")
CONDITION = '!caller.startsWith("svc-") && operation == "delete_record"'


def setup_conditions(world) -> dict[str, dict]:
    from rules.services import config_publish, rule_create

    conditioned = rule_create(config=world.config, kind="cell", match="*", condition=CONDITION, order=40)
    version = config_publish(config=world.config, user=None, note="bench: conditions")
    body = {**world.registration_body(), "config_version": version.number}
    return {
        "plain": {**body, "rule_id": world.rule.public_id},
        "conditioned": {**body, "rule_id": conditioned.public_id},
    }


def measure_conditions(world, *, load, rounds: int, duration: float, concurrency: int = 8) -> dict:
    from django.db import connection

    bodies = setup_conditions(world)
    connection.close()
    runs: dict[str, list[dict]] = {kind: [] for kind in KINDS}
    for round_number in range(rounds):
        for kind in KINDS if round_number % 2 == 0 else KINDS[::-1]:
            runs[kind].append(
                load(
                    world,
                    method="POST",
                    path="/api/v1/approvals",
                    concurrency=concurrency,
                    duration=duration,
                    body=bodies[kind],
                )
            )
    ratios = [
        c["throughput_rps"] / p["throughput_rps"] for c, p in zip(runs["conditioned"], runs["plain"], strict=True)
    ]
    return {
        "concurrency": concurrency,
        "throughput_rps": {kind: statistics.median(r["throughput_rps"] for r in runs[kind]) for kind in KINDS},
        "errors": {kind: sum(r["errors"] + r["requests"] - r["ok"] for r in runs[kind]) for kind in KINDS},
        "ratios": ratios,
    }


def conditions_rows(result: dict, row) -> list[dict]:
    ratio = statistics.median(result["ratios"])
    return [
        row(
            f"registration under a rule with a typical condition ({result['concurrency']} engines) vs none",
            result["throughput_rps"]["conditioned"],
            result["throughput_rps"]["plain"],
            " req/s",
            ratio,
            "≥ 0.9× rule without a condition",
            ratio >= 0.9 and not result["errors"]["conditioned"],
            spread=(min(result["ratios"]), max(result["ratios"])),
        )
    ]


def run(bench) -> list[dict]:
    from bench.harness import log
    from bench.report import row
    from bench.server import load

    log("conditions: registration under a rule with a typical condition vs one without")
    result = bench.results["conditions"] = measure_conditions(
        bench.world, load=load, rounds=bench.rounds, duration=bench.duration
    )
    return conditions_rows(result, row)


def main() -> None:
    import argparse
    import json
    import os
    import urllib.parse

    from bench.harness import RESULTS, World, log, recreate_database, setup_django
    from bench.report import row, table
    from bench.server import Server, load

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/hitl_bench")
    RESULTS.mkdir(parents=True, exist_ok=True)
    log(f"recreating {urllib.parse.urlparse(url).path.lstrip('/')} and migrating")
    recreate_database(url)
    setup_django(url)
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    world = World()
    connection.close()
    server = Server(url)
    try:
        result = measure_conditions(world, load=load, rounds=args.rounds, duration=args.duration)
    finally:
        server.stop()
    (RESULTS / "conditions.json").write_text(json.dumps(result, indent=2, default=str))
    print(table(conditions_rows(result, row)))


if __name__ == "__main__":
    main()
