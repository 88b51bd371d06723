"""Section: questions — a question's registration beside a gate's, and an answer → the waiting engine.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only questions

1. Registration throughput of a question (five questions, one of each type and a multi choice) beside
   the same engine registering a gate, alternating by round at 8 concurrent engines (target ≥ 0.9×).
2. From an answer's commit to the waiting engine's full answer (GET …?wait=10), as bench/long_poll.py
   measures a decision (target p95 ≤ 20 ms after commit).

In the full run it shares the portal under gunicorn (WITH_SERVER); alone it starts one.
"""

import os
import statistics

from bench.harness import Bench, World, log
from bench.long_poll import latencies
from bench.report import row

SAMPLES = 50
CONCURRENCY = 8

QUESTIONS = [
    {
        "id": "env",
        "prompt": "Which environment?",
        "type": "choice",
        "options": [{"value": "staging"}, {"value": "prod"}],
        "recommended": 0,
    },
    {
        "id": "tables",
        "prompt": "Which tables?",
        "type": "choice",
        "multi": True,
        "options": [{"value": "a"}, {"value": "b"}],
    },
    {"id": "why", "prompt": "Anything else?", "type": "text", "required": False},
    {"id": "batch", "prompt": "Rows per batch?", "type": "number", "min": 1, "max": 10000},
    {"id": "backup", "prompt": "Back up first?", "type": "boolean"},
]
ANSWERS = {"env": "staging", "tables": ["a"], "batch": 500, "backup": True}


def question_body(world: World) -> dict:
    gate = world.registration_body()
    keep = ("config_id", "config_version", "run_id", "thread_id", "caller")
    return {"kind": "question", **{key: gate[key] for key in keep}, "title": "Before the bench", "questions": QUESTIONS}


def run(bench: Bench) -> list[dict]:
    from bench.server import load

    world = bench.world
    gate_body, asked_body = world.registration_body(), question_body(world)
    rounds, ratios, runs = bench.rounds, [], {"gate": [], "question": []}
    for number in range(rounds):
        log(f"questions: registration round {number + 1}/{rounds}, gate and question at {CONCURRENCY} engines")
        pair = {}
        order = ("gate", "question") if number % 2 == 0 else ("question", "gate")
        for kind in order:
            body = gate_body if kind == "gate" else asked_body
            pair[kind] = load(
                world,
                method="POST",
                path="/api/v1/approvals",
                concurrency=CONCURRENCY,
                duration=bench.duration,
                body=body,
            )
            runs[kind].append(pair[kind])
        if pair["gate"]["throughput_rps"]:
            ratios.append(pair["question"]["throughput_rps"] / pair["gate"]["throughput_rps"])
    ratio = statistics.median(ratios) if ratios else None
    gate_rps = statistics.median(r["throughput_rps"] for r in runs["gate"])
    question_rps = statistics.median(r["throughput_rps"] for r in runs["question"])
    clean = all(r["errors"] == 0 and r["ok"] == r["requests"] for kind in runs.values() for r in kind)

    log(f"questions: answer → waiting engine through long-poll ({SAMPLES} samples)")
    ids = _registered_questions(world, SAMPLES)
    answered = latencies(world, ids, decision="answer", answers=ANSWERS, expected="answered")
    bench.results["questions"] = {"registration": runs, "ratios": ratios, "answer_to_engine": answered}
    p95 = answered["p95_ms"]
    return [
        row(
            f"question registration vs a gate's, {CONCURRENCY} engines",
            question_rps,
            gate_rps,
            " req/s",
            ratio,
            "≥ 0.9× a gate's",
            ratio is not None and ratio >= 0.9 and clean,
            spread=(min(ratios), max(ratios)) if ratios else None,
        ),
        row(
            "answer → waiting engine (long-poll): p95",
            p95,
            None,
            " ms",
            None,
            "≤ 20 ms after commit",
            p95 is not None and p95 <= 20 and not answered["failed"],
        ),
    ]


def _registered_questions(world: World, count: int) -> list[str]:
    from approvals.engine.register import Sent, register

    body = question_body(world)
    return [
        register(
            workspace=world.workspace,
            engine_key=world.engine_key,
            sent=Sent(
                kind="question",
                config_id=body["config_id"],
                config_version=body["config_version"],
                run_id=f"run_bench_q{n}",
                thread_id="",
                caller=body["caller"],
                title=body["title"],
                questions=QUESTIONS,
            ),
        ).approval.public_id
        for n in range(count)
    ]


def run_alone(bench: Bench) -> list[dict]:
    """`--only questions`: the section on an empty table, with a portal of its own under gunicorn."""
    from django.db import connection

    from bench.server import Server

    connection.close()
    server = Server(os.environ["BENCH_DATABASE_URL"])
    try:
        return run(bench)
    finally:
        server.stop()
