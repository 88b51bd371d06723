"""Section: coding agents — `hitl-hook claude-code` as Claude Code runs it, a new process per tool call.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only coding-agents

1. Cold start: the installed console script, Claude Code's PreToolUse JSON on stdin, until it exits —
   for a tool nothing gates (`ls`: no portal call) and for a destructive call the served table does not
   gate (one GET of the served table). Target ≤ 150 ms, Python's start included; beside it the floor,
   the same interpreter starting and doing nothing (`python -c pass`), and `python -I -S -c pass`
   (no site-packages: what an interpreter costs before any package is looked at).
2. Decision → Claude Code unblocked: a gated call's hook waiting (long-poll up, keys fetched), a
   reviewer's decision committed, until the hook has printed its answer and exited. Target p95 ≤ 50 ms.

In the full run it shares the portal under gunicorn (WITH_SERVER); alone it starts one.
"""

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.harness import Bench, World, log
from bench.report import row
from bench.server import PORT

HOOK = str(Path(sys.executable).with_name("hitl-hook"))
COLD_SAMPLES = 30
DECISION_SAMPLES = 20


def hook_input(command: str, *, session: str = "bench-session", tool_use_id: str = "toolu_bench") -> str:
    return json.dumps(
        {
            "session_id": session,
            "cwd": "/home/dev/shop",
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_use_id": tool_use_id,
        }
    )


def hook_env(world: World) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    env.update(HITL_URL=f"http://127.0.0.1:{PORT}", HITL_ENGINE_KEY=world.engine_token)
    return env


def timed_runs(command: list[str], stdin: str, env: dict, samples: int) -> list[float]:
    times = []
    for _ in range(samples):
        started = time.perf_counter()
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, timeout=60)
        times.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0 or done.stdout:
            raise RuntimeError(f"an ungated call was answered: {done.returncode} {done.stdout!r} {done.stderr!r}")
    return times


def summary(times: list[float]) -> dict:
    ordered = sorted(times)
    return {
        "p50_ms": statistics.median(ordered),
        "p95_ms": ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))],
        "samples": ordered,
    }


def ungated_config(world: World) -> str:
    """A config of the bench workspace that gates an MCP server only: a delete is read, looked up, let be."""
    from rules.services import config_create, config_publish, rule_create

    config = config_create(workspace=world.workspace, name="Coding agent, MCP only")
    rule_create(config=config, kind="mcp_server", match="mcp_billing")
    config_publish(config=config, user=None, note="coding agents bench")
    return config.public_id


def decision_to_unblocked(world: World, env: dict, samples: int) -> dict:
    """From the decision's commit to the hook's exit with its answer printed."""
    from django.db import transaction

    from approvals.decide import approval_decide
    from approvals.models import ApprovalRequest

    times, failures = [], []
    for n in range(samples):
        session = f"bench-hook-{time.time_ns()}-{n}"
        process = subprocess.Popen(
            [HOOK, "claude-code", "--config", world.config.public_id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        exited: list[float] = []
        output: list[str] = []

        stdin = hook_input("terraform destroy", session=session)

        def finish(
            process: subprocess.Popen = process, stdin: str = stdin, exited: list = exited, output: list = output
        ):  # noqa: E501
            stdout, _ = process.communicate(stdin, timeout=60)
            exited.append(time.perf_counter())
            output.append(stdout)

        waiter = threading.Thread(target=finish)
        waiter.start()
        deadline = time.monotonic() + 30
        approval = None
        while approval is None and time.monotonic() < deadline:
            approval = ApprovalRequest.objects.filter(run_id=session, status="pending").first()
            time.sleep(0.02)
        if approval is None:
            failures.append({"session": session, "why": "never registered"})
            waiter.join(timeout=60)
            continue
        time.sleep(0.5)  # the hook is in its long-poll (and has fetched the receipt keys) before anyone decides
        committed: list[float] = []
        with transaction.atomic():
            transaction.on_commit(lambda: committed.append(time.perf_counter()))  # noqa: B023
            approval_decide(approval=approval, user=world.reviewer, decision="approve", reason="")
        waiter.join(timeout=60)
        answer = json.loads(output[0]) if output and output[0] else {}
        if answer.get("hookSpecificOutput", {}).get("permissionDecision") != "allow" or not exited:
            failures.append({"session": session, "answer": output[0] if output else None})
            continue
        times.append((exited[0] - committed[0]) * 1000)
    return {**(summary(times) if times else {"p50_ms": None, "p95_ms": None}), "failed": failures}


def run(bench: Bench) -> list[dict]:
    world = bench.world
    env = hook_env(world)
    log(f"coding agents: hitl-hook cold start, {COLD_SAMPLES} runs each")
    floor = summary(timed_runs([sys.executable, "-c", "pass"], "", env, COLD_SAMPLES))
    bare = summary(timed_runs([sys.executable, "-I", "-S", "-c", "pass"], "", env, COLD_SAMPLES))
    hook = [HOOK, "claude-code", "--config"]
    not_mapped = summary(timed_runs([*hook, "cfg_x"], hook_input("ls -la"), env, COLD_SAMPLES))
    served = summary(timed_runs([*hook, ungated_config(world)], hook_input("rm -rf build"), env, COLD_SAMPLES))
    log(f"coding agents: decision → hitl-hook answered and exited, {DECISION_SAMPLES} samples")
    unblocked = decision_to_unblocked(world, env, DECISION_SAMPLES)
    bench.results["coding_agents"] = {
        "python_floor": floor,
        "python_bare": bare,
        "ungated_not_mapped": not_mapped,
        "ungated_served_check": served,
        "decision_to_unblocked": unblocked,
    }
    return [
        row("hitl-hook, a tool nothing maps (no portal call): p95", not_mapped["p95_ms"], floor["p95_ms"], " ms",
            not_mapped["p95_ms"] / floor["p95_ms"], "≤ 150 ms cold", not_mapped["p95_ms"] <= 150),
        row("hitl-hook, a delete the served table does not gate (one GET): p95", served["p95_ms"], floor["p95_ms"],
            " ms", served["p95_ms"] / floor["p95_ms"], "≤ 150 ms cold", served["p95_ms"] <= 150),
        row("python -I -S -c pass (no site-packages): p95", bare["p95_ms"], None, " ms", None, "(reference)", True),
        row("decision → Claude Code unblocked (hook answered, exited): p95", unblocked["p95_ms"], None, " ms", None,
            "≤ 50 ms after the click", unblocked["p95_ms"] is not None and unblocked["p95_ms"] <= 50
            and not unblocked["failed"]),
    ]  # fmt: skip


def run_alone(bench: Bench) -> list[dict]:
    """`--only coding-agents`: the section on an empty table, with a portal of its own under gunicorn."""
    from django.db import connection

    from bench.server import Server

    connection.close()
    server = Server(os.environ["BENCH_DATABASE_URL"])
    try:
        return run(bench)
    finally:
        server.stop()
