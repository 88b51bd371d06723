"""Section: coding agents — `hitl-hook claude-code` as Claude Code runs it, a new process per tool call.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only coding-agents

1. Cold start: the installed console script, Claude Code's PreToolUse JSON on stdin, until it exits —
   for a tool nothing gates (`ls`: no portal call) and for a destructive call the served table does not
   gate (one GET of the served table). Target ≤ 150 ms, Python's start included; beside it the floor,
   the same interpreter starting and doing nothing (`python -c pass`), and `python -I -S -c pass`
   (no site-packages: what an interpreter costs before any package is looked at). Each beside its
   CPU time (user + system), which a busy machine's wait for a core does not inflate.
2. Decision → Claude Code unblocked: a gated call's hook waiting (long-poll up, keys fetched), a
   reviewer's decision committed, until the hook has printed its answer and exited. Target p95 ≤ 50 ms;
   the floor beside it is a bare Python process long-polling the same way with urllib (no client, no
   receipt check) until it has printed and exited.

In the full run it shares the portal under gunicorn (WITH_SERVER); alone it starts one.
"""

import json
import os
import resource
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


def timed_runs(command: list[str], stdin: str, env: dict, samples: int) -> dict:
    """Wall time per run, and the process's own CPU time (user + system): on a busy machine the wall time
    is mostly waiting for a core, the CPU time is what the process costs."""
    times, cpu = [], []
    for _ in range(samples):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, env=env, timeout=60)
        times.append((time.perf_counter() - started) * 1000)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
        if done.returncode != 0 or done.stdout:
            raise RuntimeError(f"an ungated call was answered: {done.returncode} {done.stdout!r} {done.stderr!r}")
    return {**summary(times), "cpu_p50_ms": statistics.median(cpu), "cpu_p95_ms": percentile(cpu, 0.95)}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def summary(times: list[float]) -> dict:
    return {"p50_ms": statistics.median(times), "p95_ms": percentile(times, 0.95), "samples": sorted(times)}


def ungated_config(world: World) -> str:
    """A config of the bench workspace that gates an MCP server only: a delete is read, looked up, let be."""
    from rules.services import config_create, config_publish, rule_create

    config = config_create(workspace=world.workspace, name="Coding agent, MCP only")
    rule_create(config=config, kind="mcp_server", match="mcp_billing")
    config_publish(config=config, user=None, note="coding agents bench")
    return config.public_id


# The floor of "decision → a waiting process has answered and exited": a bare Python process that
# long-polls the request with urllib and prints the status — no client, no receipt check.
BARE_WAITER = """
import json, os, sys, urllib.request
while True:
    request = urllib.request.Request(os.environ["HITL_URL"] + "/api/v1/approvals/" + sys.argv[1] + "?wait=30",
                                     headers={"Authorization": "Bearer " + os.environ["HITL_ENGINE_KEY"]})
    status = json.loads(urllib.request.urlopen(request, timeout=40).read())["status"]
    if status != "pending":
        print(json.dumps({"hookSpecificOutput": {"permissionDecision": "allow" if status == "approved" else "deny"}}))
        break
"""


def decision_to_unblocked(world: World, env: dict, samples: int, *, bare: bool = False) -> dict:
    """From the decision's commit to the hook's exit with its answer printed (`bare`: to BARE_WAITER's)."""
    from django.db import transaction

    from approvals.models import ApprovalRequest
    from approvals.review.decide import approval_decide

    times, failures = [], []
    for n in range(samples):
        session = f"bench-hook-{time.time_ns()}-{n}"
        command = [HOOK, "claude-code", "--config", world.config.public_id]
        if bare:  # the request is registered here; the process only waits for it
            command = [sys.executable, "-c", BARE_WAITER, register_for(world, session)]
        process = subprocess.Popen(
            command,
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


def register_for(world: World, session: str) -> str:
    from approvals.engine.register import Sent, register

    body = world.registration_body()
    return register(
        workspace=world.workspace,
        engine_key=world.engine_key,
        sent=Sent(
            kind="gate",
            config_id=body["config_id"],
            config_version=body["config_version"],
            rule_id=body["rule_id"],
            run_id=session,
            thread_id=session,
            caller="bench",
            target="terraform destroy",
            operation="terraform destroy",
        ),
    ).approval.public_id


def run(bench: Bench) -> list[dict]:
    world = bench.world
    env = hook_env(world)
    log(f"coding agents: hitl-hook cold start, {COLD_SAMPLES} runs each")
    floor = timed_runs([sys.executable, "-c", "pass"], "", env, COLD_SAMPLES)
    bare = timed_runs([sys.executable, "-I", "-S", "-c", "pass"], "", env, COLD_SAMPLES)
    hook = [HOOK, "claude-code", "--config"]
    not_mapped = timed_runs([*hook, "cfg_x"], hook_input("ls -la"), env, COLD_SAMPLES)
    served = timed_runs([*hook, ungated_config(world)], hook_input("rm -rf build"), env, COLD_SAMPLES)
    log(f"coding agents: decision → hitl-hook answered and exited, {DECISION_SAMPLES} samples")
    unblocked = decision_to_unblocked(world, env, DECISION_SAMPLES)
    bare_waiter = decision_to_unblocked(world, env, DECISION_SAMPLES, bare=True)
    bench.results["coding_agents"] = {
        "python_floor": floor,
        "python_bare": bare,
        "ungated_not_mapped": not_mapped,
        "ungated_served_check": served,
        "decision_to_unblocked": unblocked,
        "decision_to_bare_waiter": bare_waiter,
    }
    return [
        row("hitl-hook, a tool nothing maps (no portal call): p95", not_mapped["p95_ms"], floor["p95_ms"], " ms",
            not_mapped["p95_ms"] / floor["p95_ms"], "≤ 150 ms cold", not_mapped["p95_ms"] <= 150),
        row("  …its CPU time (user + system): p50", not_mapped["cpu_p50_ms"], floor["cpu_p50_ms"], " ms",
            not_mapped["cpu_p50_ms"] / floor["cpu_p50_ms"], "(what it costs, load aside)", True),
        row("hitl-hook, a delete the served table does not gate (one GET): p95", served["p95_ms"], floor["p95_ms"],
            " ms", served["p95_ms"] / floor["p95_ms"], "≤ 150 ms cold", served["p95_ms"] <= 150),
        row("  …its CPU time (user + system): p50", served["cpu_p50_ms"], floor["cpu_p50_ms"], " ms",
            served["cpu_p50_ms"] / floor["cpu_p50_ms"], "(what it costs, load aside)", True),
        row("python -I -S -c pass (no site-packages): p95", bare["p95_ms"], None, " ms", None, "(reference)", True),
        row("decision → Claude Code unblocked (hook answered, exited): p95", unblocked["p95_ms"],
            bare_waiter["p95_ms"], " ms", ratio(unblocked, bare_waiter), "≤ 50 ms after the click",
            unblocked["p95_ms"] is not None and unblocked["p95_ms"] <= 50 and not unblocked["failed"]),
    ]  # fmt: skip


def ratio(measured: dict, floor: dict) -> float | None:
    if measured["p95_ms"] is None or not floor["p95_ms"]:
        return None
    return measured["p95_ms"] / floor["p95_ms"]


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
