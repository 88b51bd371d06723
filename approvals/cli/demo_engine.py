"""`hitl demo-engine`: a scripted agent run against a live portal, over HTTP, through the hitl-client package.

It touches no database: everything goes through the REST API with an engine key, exactly as a
real engine would, so a newcomer sees requests arrive in the queue, decides them, and watches
the run resume or halt.
"""

import argparse
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from hitl_client import GatedCall, HitlClient, HitlError, Verdict

TURNS = ("delete", "mcp", "token_cap")
# The gated calls the scripted agent makes: what it says it does, and the call itself.
GATED_CALLS = {
    "delete": (
        "the agent wants to delete customer T-4821 and their tickets",
        {
            "kind": "delete",
            "target": "customer T-4821",
            "operation": "delete",
            "summary": "Delete the customer record T-4821 and their 3 tickets",
            "arguments": {"customer_id": "T-4821", "cascade": ["tickets"]},
        },
    ),
    "mcp": (
        "the agent calls issue_refund on the MCP server mcp_billing",
        {
            "kind": "mcp_server",
            "target": "mcp_billing",
            "operation": "issue_refund",
            "summary": "Refund 49.00 USD on ticket T-4821",
            "arguments": {"ticket_id": "T-4821", "amount_cents": 4900},
        },
    ),
}


class _Printer(logging.Handler):
    def __init__(self, write: Callable[[str], object]) -> None:
        super().__init__()
        self.write = write

    def emit(self, record: logging.LogRecord) -> None:
        self.write(f"  engine log: {record.getMessage()}")


def demo_engine(cmd: BaseCommand, options: dict[str, Any]) -> None:
    out = cmd.stdout.write
    turns = [turn.strip() for turn in options["turns"].split(",") if turn.strip()]
    unknown = [turn for turn in turns if turn not in TURNS]
    if unknown or not turns:
        raise CommandError(f"--turns takes a comma-separated list of {', '.join(TURNS)}; not {', '.join(unknown)}.")
    log = logging.getLogger("hitl_client.demo")
    log.propagate = False
    log.setLevel(logging.INFO)
    log.handlers = [_Printer(out)]
    client = HitlClient(options["url"], options["key"], log=log)
    queue_url = options["url"].rstrip("/") + "/hitl/approvals/"
    run_id = f"run_{uuid.uuid4().hex[:12]}"
    thread_id = "thr_demo"
    wait = options["wait"]

    def pending(approval: dict) -> None:
        out(f"  ⏸  paused: {approval['id']} is waiting for a person — decide it at {queue_url}")

    try:
        served = client.served(options["config"])
        out(f"Run {run_id} on {served['config_id']}@{served['version']} ({len(served['gates'])} gates)")
        for number, turn in enumerate(turns, start=1):
            out(f"\nTurn {number}: {turn}")
            if turn in GATED_CALLS:
                story, call = GATED_CALLS[turn]
                out(f"  {story}")
                verdict = client.gate_call(
                    served,
                    GatedCall(
                        **call, run_id=run_id, thread_id=thread_id, call_id=f"call_{number}", caller="support-bot"
                    ),
                    # Takes what was approved, so a reviewer's edit is what runs (an execute() without
                    # arguments could only run the proposal, and an edited approval would halt the run).
                    execute=lambda arguments: f"exec_{uuid.uuid4().hex[:8]}",
                    wait_timeout=wait,
                    on_pending=pending,
                )
            else:
                verdict = _token_cap_turn(client, served, run_id, thread_id, number, wait, pending, out)
            if not _report(verdict, out):
                out(f"\nRun {run_id} halted.")
                return
        out(f"\nRun {run_id} finished.")
    except HitlError as error:
        raise CommandError(f"The portal refused: {error}") from None


def _token_cap_turn(client, served, run_id, thread_id, number, wait, pending, out) -> Verdict:
    caps = served.get("token_caps") or {}
    cap = caps.get("per_turn")
    if not cap:
        out("  this config has no per-turn token cap: nothing to breach")
        return Verdict(True, "not_gated", "No token cap.")
    used = cap + 1_200
    out(f"  the turn used {used:,} tokens against a cap of {cap:,}")
    if caps.get("mode") == "stop":
        return Verdict(False, "stopped", "The token cap's mode is stop: the run ends.")
    approval = client.request_token_cap(
        served,
        run_id=run_id,
        thread_id=thread_id,
        call_id=f"cap_{number}",
        caller="support-bot",
        tokens_used=used,
        token_cap=cap,
    )
    if approval.get("status") == "inert":
        return Verdict(True, "inert", approval["notice"])
    pending(approval)
    approval = client.wait(approval["id"], wait)
    verdict = client.verdict_of(approval)
    if verdict.allowed:
        verdict.message = "Proceed past cap: the cap is waived for the rest of this turn."
    elif verdict.state == "rejected":
        reason = (approval.get("decision") or {}).get("reason")
        verdict.message = "Stop the run: a reviewer ended it at the token cap" + (f" ({reason})" if reason else ".")
    return verdict


def _report(verdict: Verdict, out) -> bool:
    """Print what happened; True when the run goes on."""
    if verdict.allowed:
        out(f"  ▶  resumed ({verdict.state}): {verdict.message}")
        if verdict.edited:
            out(f"     with the reviewer's edits: {json.dumps(verdict.arguments, sort_keys=True)}")
        execution = (verdict.approval or {}).get("execution")
        if execution:
            out(f"     ran it; reported outcome {execution['status']} ({execution.get('execution_id')})")
        return True
    out(f"  ■  halted ({verdict.state}): {verdict.message}")
    return False


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo-engine", help="run scripted agent turns against a live portal over HTTP (an engine's view)"
    )
    parser.add_argument("--url", default="http://127.0.0.1:8000/", help="the portal's base URL")
    parser.add_argument("--key", required=True, help="an engine key (hitl token create --engine NAME)")
    parser.add_argument("--config", required=True, help="the config's public id (cfg_…)")
    parser.add_argument(
        "--turns", default=",".join(TURNS), help=f"comma-separated turns to run, in order (default: {','.join(TURNS)})"
    )
    parser.add_argument(
        "--wait", type=float, default=None, help="give up waiting for a decision after this many seconds"
    )
    parser.set_defaults(handler=demo_engine)
