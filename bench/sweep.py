"""Section: the sweep of every overdue request against one raw UPDATE of the same rows."""

import statistics
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.harness import RESULTS, Bench, log, sql, vacuum
from bench.report import row


def run(bench: Bench) -> list[dict]:
    log(f"sweep of {bench.pending:,} overdue requests vs one raw UPDATE of the same rows")
    sw = bench.results["sweep"] = measure_sweep(bench, rounds=min(bench.rounds, 3))
    if bench.args.profile:
        profile_sweep(bench, RESULTS / "profile-sweep.txt")
    ratio = statistics.median(sw["ratios"])
    return [
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
    ]


def seed_overdue(bench: Bench, tag: str) -> None:
    """`bench.pending` fresh pending requests, all past their deadline, then VACUUM ANALYZE.

    Decided requests are final (a row trigger, approvals/migrations/0007), so a round cannot
    un-expire the last round's rows: each timed run gets new ones instead, spread over 12 hours
    like the seeded pending requests, due between 12½ hours and half an hour ago. The seeded
    pending requests and the registrations stay in time, so both sides expire exactly these.
    """
    now = datetime.now(UTC)
    bench.world.seed(
        count=bench.pending,
        status="pending",
        tag=tag,
        created_from=now - timedelta(hours=13),
        step_ms=max(1, int(12 * 3600 * 1000 / bench.pending)),
        ttl_s=1800,
    )
    vacuum()


def measure_sweep(bench: Bench, rounds: int) -> dict:
    """The sweep and one raw UPDATE of as many fresh overdue rows, in alternating rounds; medians."""
    from django.db import transaction

    from approvals.tasks import sweep_overdue

    def raw() -> int:
        with transaction.atomic():
            return sql(
                "UPDATE approvals_approvalrequest SET status = 'expired', decided_at = expires_at,"
                " reason = 'Nobody answered before the deadline.', decision_action = ''"
                " WHERE status = 'pending' AND expires_at <= now()"
            )

    # Anything the earlier sections left overdue goes first, untimed, so each run expires only its own rows.
    if leftover := sweep_overdue():
        log(f"expired {leftover:,} requests left overdue by earlier sections before timing")
    timings: dict[str, list[float]] = {"raw": [], "sweep": []}
    counts: dict[str, list[int]] = {"raw": [], "sweep": []}
    for round_number in range(rounds):
        for name in ("sweep", "raw") if round_number % 2 else ("raw", "sweep"):
            seed_overdue(bench, tag=f"swp{round_number}{name[0]}")
            t0 = time.perf_counter()
            counts[name].append((sweep_overdue if name == "sweep" else raw)())
            timings[name].append(time.perf_counter() - t0)
    return {
        "rows": bench.pending,
        # Every run must have expired exactly the rows seeded for it, no more (nothing else overdue).
        "raw_rows": max(counts["raw"]) if set(counts["raw"]) == {bench.pending} else -1,
        "swept_rows": max(counts["sweep"]) if set(counts["sweep"]) == {bench.pending} else -2,
        "raw_s": statistics.median(timings["raw"]),
        "sweep_s": statistics.median(timings["sweep"]),
        "ratios": [sweep / raw for sweep, raw in zip(timings["sweep"], timings["raw"], strict=True)],
        "rounds": timings,
        "counts": counts,
    }


def profile_sweep(bench: Bench, out: Path) -> None:
    from pyinstrument import Profiler

    from approvals.tasks import sweep_overdue

    seed_overdue(bench, tag="swpprof")
    profiler = Profiler()
    profiler.start()
    sweep_overdue()
    profiler.stop()
    out.write_text(profiler.output_text(unicode=True, color=False))
