"""Section: the sweep of every overdue request against one raw UPDATE of the same rows."""

import statistics
import time
from pathlib import Path

from bench.harness import RESULTS, Bench, log, sql, vacuum
from bench.report import row

RESET_SEEDED_PENDING = """
UPDATE approvals_approvalrequest SET status = 'pending', decided_at = NULL, reason = '', decision_action = ''
WHERE public_id LIKE 'apr_pend%%' AND status = 'expired'
"""


def run(bench: Bench) -> list[dict]:
    log(f"sweep of {bench.pending:,} overdue requests vs one raw UPDATE of the same rows")
    sw = bench.results["sweep"] = measure_sweep(rounds=min(bench.rounds, 3))
    if bench.args.profile:
        profile_sweep(RESULTS / "profile-sweep.txt")
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
