"""The approver policy's cost on the registration hot path (bench section `policy`).

Three kinds of registration, alternating in rounds on the same server and database:
- plain: a rule without `allow_run_grant` (the plain one-statement INSERT);
- grantable: a rule with `allow_run_grant` and no live grant — the INSERT carries a CTE that
  probes the live-grant index (target: within 10% of plain);
- granted: the same rule on a run with a live grant — stored already approved (auto-approval path).

    BENCH_DATABASE_URL=postgres://…/hitl_bench_h12 python -m bench.policy [--duration 3] [--rounds 3]

runs this section alone on a fresh database; `python -m bench` runs it beside the others.
"""

import statistics

KINDS = ("plain", "grantable", "granted")


def setup_policy(world) -> dict[str, dict]:
    """A second rule that allows run grants in a new version, and a live grant on one run of it."""
    from datetime import timedelta

    from django.utils import timezone

    from approvals.models import ApprovalKind, ApprovalRequest, Grant, Status
    from rules.services import config_publish, rule_create

    grantable = rule_create(config=world.config, kind="worker", match="*", allow_run_grant=True, order=20)
    version = config_publish(config=world.config, user=None, note="bench: policy")
    body = world.registration_body()
    body["config_version"] = version.number
    bodies = {
        "plain": {**body, "rule_id": world.rule.public_id},
        "grantable": {**body, "rule_id": grantable.public_id, "run_id": "run_no_grant"},
        "granted": {**body, "rule_id": grantable.public_id, "run_id": "run_granted"},
    }
    now = timezone.now()
    first = ApprovalRequest.objects.create(
        workspace=world.workspace,
        kind=ApprovalKind.GATE,
        config=world.config,
        config_version=version.number,
        rule_id=grantable.public_id,
        run_id="run_granted",
        pass_information_level=version.pass_information_level,
        expires_at=now + timedelta(hours=24),
        allow_run_grant=True,
        status=Status.APPROVED,
    )
    Grant.objects.create(
        workspace=world.workspace,
        config=world.config,
        rule_id=grantable.public_id,
        run_id="run_granted",
        approval=first,
        granted_by=world.reviewer,
        granted_by_email=world.reviewer.email,
        expires_at=now + timedelta(hours=8),
    )
    return bodies


def measure_policy(world, *, load, rounds: int, duration: float, concurrency: int = 8) -> dict:
    """Registration throughput of the three kinds, in rounds whose order rotates; ratios against plain."""
    from django.db import connection

    bodies = setup_policy(world)
    connection.close()
    runs: dict[str, list[dict]] = {kind: [] for kind in KINDS}
    for round_number in range(rounds):
        order = KINDS[round_number % 3 :] + KINDS[: round_number % 3]
        for kind in order:
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
    ratios = {
        kind: [
            run["throughput_rps"] / plain["throughput_rps"]
            for run, plain in zip(runs[kind], runs["plain"], strict=True)
        ]
        for kind in ("grantable", "granted")
    }
    return {
        "concurrency": concurrency,
        "throughput_rps": {kind: statistics.median(r["throughput_rps"] for r in runs[kind]) for kind in KINDS},
        "p50_ms": {kind: statistics.median(r["p50_ms"] for r in runs[kind]) for kind in KINDS},
        "errors": {kind: sum(r["errors"] + r["requests"] - r["ok"] for r in runs[kind]) for kind in KINDS},
        "ratios": ratios,
        "granted_check": _granted_check(),
    }


def _granted_check() -> dict:
    """Proof that the granted runs took the auto-approved path (and the others did not)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT run_id, status, count(*) FROM approvals_approvalrequest "
            "WHERE run_id IN ('run_granted', 'run_no_grant') GROUP BY run_id, status"
        )
        return {f"{run_id}/{status}": count for run_id, status, count in cursor.fetchall()}


def policy_rows(result: dict, row) -> list[dict]:
    """The section's rows for the bench table (`row` is the table's row builder)."""
    plain = result["throughput_rps"]["plain"]
    rows = []
    for kind, target, floor_ratio in (
        ("grantable", "≥ 0.9× plain rule", 0.9),
        ("granted", "— (auto-approved path)", None),
    ):
        ratio = statistics.median(result["ratios"][kind])
        rows.append(
            row(
                f"registration, rule with allow_run_grant, {'no grant live' if kind == 'grantable' else 'live grant'}"
                f" ({result['concurrency']} engines) vs plain rule",
                result["throughput_rps"][kind],
                plain,
                " req/s",
                ratio,
                target,
                None if floor_ratio is None else (ratio >= floor_ratio and not result["errors"][kind]),
                spread=(min(result["ratios"][kind]), max(result["ratios"][kind])),
            )
        )
    return rows


def run(bench) -> list[dict]:
    """The section as `python -m bench` runs it (with the server up, on the big table)."""
    from bench.harness import log
    from bench.report import row
    from bench.server import load

    log("approver policy: registration on a rule with allow_run_grant, without and with a live grant")
    result = bench.results["policy"] = measure_policy(
        bench.world, load=load, rounds=bench.rounds, duration=bench.duration
    )
    return policy_rows(result, row)


def main() -> None:
    import argparse
    import json
    import os
    import urllib.parse

    from bench.harness import RESULTS, World, log, recreate_database, setup_django
    from bench.report import row, table
    from bench.server import Server, load

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per load run")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three kinds")
    parser.add_argument("-c", "--concurrency", type=int, default=8)
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
        log(f"registration: plain / grantable / granted rules, {args.rounds} rounds of {args.duration} s")
        result = measure_policy(
            world, load=load, rounds=args.rounds, duration=args.duration, concurrency=args.concurrency
        )
    finally:
        server.stop()
    (RESULTS / "policy.json").write_text(json.dumps(result, indent=2, default=str))
    print(table(policy_rows(result, row)))
    print(json.dumps({"ratios": result["ratios"], "granted_check": result["granted_check"]}))


if __name__ == "__main__":
    main()
