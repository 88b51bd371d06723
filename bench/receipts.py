"""Signed receipts' cost (bench section `receipts`): registration and decision with and without them, and
the client's check of one.

In-process, alternating rounds on the same database: one cycle is what an engine and a reviewer
cause — a registration (`registration_answer`, the engine API's own function), the decision
(`approval_decide`) and the engine's read of the decided request (`approval_as_dict`, where the
receipt is signed). "Without" is the same cycle with the receipt left out of the rendering (the
signing function replaced for the round), so the ratio is the signing's whole cost. Target: with
receipts ≥ 0.9× without. Then the client's `verify_receipt` on one receipt (target ≤ 1 ms).

    BENCH_DATABASE_URL=postgres://…/hitl_bench python -m bench --only receipts [--quick]
"""

import statistics
import time

CYCLES = 300  # per round (quick: 60)
VERIFIES = 2000


def _cycle(world, engine_actor, reviewer, serial: int) -> dict:
    from approvals.engine.api import registration_answer
    from approvals.models import ApprovalRequest
    from approvals.presenters.api import approval_as_dict
    from approvals.review.decide import approval_decide

    body = {**world.registration_body(), "target": f"crm/customers/{serial}", "run_id": f"run_receipts_{serial}"}
    status, answer = registration_answer(actor=engine_actor, idempotency_header=None, body=body)
    assert status == 201, answer
    approval = ApprovalRequest.objects.select_related("config").get(public_id=answer["id"])
    approval, _ = approval_decide(approval=approval, user=reviewer, decision="approve")
    return approval_as_dict(approval)


def _round(world, engine_actor, reviewer, *, cycles: int, start: int, receipts: bool) -> float:
    """Cycles per second of one round."""
    from approvals.presenters import api as serializers

    signing = serializers.receipt_of
    if not receipts:
        serializers.receipt_of = lambda approval, decision, *, status: None
    try:
        started = time.perf_counter()
        for serial in range(start, start + cycles):
            answer = _cycle(world, engine_actor, reviewer, serial)
            assert (answer["receipt"] is not None) == receipts
        return cycles / (time.perf_counter() - started)
    finally:
        serializers.receipt_of = signing


def measure_receipts(world, *, rounds: int, cycles: int) -> dict:
    from hitl_client.receipts import keys_of, verify_receipt

    from approvals.receipts.keys import jwks
    from workspaces.access import actor_for_token

    engine_actor = actor_for_token(world.engine_key)
    _round(world, engine_actor, world.reviewer, cycles=20, start=0, receipts=True)  # warm: versions, keys, plans
    runs: dict[str, list[float]] = {"with": [], "without": []}
    serial = 1000
    for number in range(rounds):
        order = ("with", "without") if number % 2 == 0 else ("without", "with")
        for kind in order:
            runs[kind].append(
                _round(world, engine_actor, world.reviewer, cycles=cycles, start=serial, receipts=kind == "with")
            )
            serial += cycles
    ratios = [with_ / without for with_, without in zip(runs["with"], runs["without"], strict=True)]

    answer = _cycle(world, engine_actor, world.reviewer, serial)
    keys = keys_of(jwks())
    timings = []
    for _ in range(VERIFIES):
        started = time.perf_counter()
        verify_receipt(answer["receipt"], keys, approval_id=answer["id"], call_digest=answer["call_digest"])
        timings.append((time.perf_counter() - started) * 1000)
    return {
        "cycles_per_round": cycles,
        "cycles_per_s": {kind: statistics.median(values) for kind, values in runs.items()},
        "ratios": ratios,
        "verify_ms_median": statistics.median(timings),
        "verify_ms_p99": statistics.quantiles(timings, n=100)[-1],
    }


def receipts_rows(result: dict, row) -> list[dict]:
    ratio = statistics.median(result["ratios"])
    return [
        row(
            "registration + decision + read, receipts signed vs not (in-process)",
            result["cycles_per_s"]["with"],
            result["cycles_per_s"]["without"],
            " cycles/s",
            ratio,
            "≥ 0.9× without",
            ratio >= 0.9,
            spread=(min(result["ratios"]), max(result["ratios"])),
        ),
        row(
            "client: verify one receipt (EdDSA, PyJWT), median",
            result["verify_ms_median"],
            None,
            " ms",
            None,
            "≤ 1 ms",
            result["verify_ms_median"] <= 1.0,
        ),
    ]


def run(bench) -> list[dict]:
    from bench.harness import log
    from bench.report import row

    quick = getattr(bench.args, "quick", False)
    cycles = 60 if quick else CYCLES
    log(f"receipts: registration + decision + read, {bench.rounds} rounds of {cycles} with and without")
    result = bench.results["receipts"] = measure_receipts(bench.world, rounds=max(bench.rounds, 2), cycles=cycles)
    return receipts_rows(result, row)
