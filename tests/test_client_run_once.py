"""Run once (docs/receipts.md): an engine killed after the approved call ran, before it reported the outcome,
does not run it again when it restarts — the portal holds its `started`, and the agent hears "in doubt"."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hitl_client import GatedCall, HitlClient

from approvals.models import ApprovalRequest

from .approvals.engine_support import decide
from .helpers import make_config, make_rule, make_token, publish

# The engine, as its own process: asks, waits, runs the refund (a line in the ledger), and dies at once —
# before the client can report what happened.
ENGINE = """
import os, sys
from hitl_client import GatedCall, HitlClient

url, key, config, ledger = sys.argv[1:5]
client = HitlClient(url, key)

def refund(arguments):
    with open(ledger, "a", encoding="utf-8") as out:
        out.write(f"refund {arguments['ticket_id']}\\n")
    os._exit(9)

call = GatedCall(kind="mcp_server", target="mcp_billing", operation="issue_refund", run_id="run_7",
                 thread_id="thr_1", call_id="call_1", caller="billing-bot", arguments={"ticket_id": "T-4821"})
client.gate_call(client.served(config), call, execute=refund, wait_timeout=30)
"""


@pytest.fixture
def billing(acme, alice) -> str:
    config = make_config(acme, pass_information_level="full")
    make_rule(config, kind="mcp_server", match="mcp_billing")
    publish(config, alice)
    return config.public_id


def _pending(seconds: float = 20) -> ApprovalRequest:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = ApprovalRequest.objects.filter(status="pending").first()
        if found is not None:
            return found
        time.sleep(0.05)
    raise AssertionError("the engine never asked")


def test_a_restarted_engine_never_runs_a_call_that_started_and_tells_the_agent_it_is_in_doubt(
    live_server, acme, bob, billing, tmp_path
):
    key = make_token(acme, engine="billing-engine")
    ledger = tmp_path / "ledger"
    ledger.touch()
    engine = subprocess.Popen(
        [sys.executable, "-c", ENGINE, live_server.url, key, billing, str(ledger)], env=dict(os.environ)
    )
    decide(_pending().public_id, bob, "approve")
    assert engine.wait(timeout=30) == 9  # killed right after the refund, before any outcome report
    assert ledger.read_text().splitlines() == ["refund T-4821"]

    restarted = HitlClient(live_server.url, key)
    ran = []
    call = GatedCall(
        kind="mcp_server", target="mcp_billing", operation="issue_refund", run_id="run_7", thread_id="thr_1",
        call_id="call_1", caller="billing-bot", arguments={"ticket_id": "T-4821"},
    )  # fmt: skip
    verdict = restarted.gate_call(restarted.served(billing), call, execute=ran.append)

    assert ran == [] and Path(ledger).read_text().splitlines() == ["refund T-4821"]
    assert not verdict.allowed and verdict.state == "in_doubt"
    assert "nobody knows whether it ran" in verdict.message and "not run again" in verdict.message
    stored = ApprovalRequest.objects.get()
    assert stored.execution_status == "started"  # still in doubt: for a reviewer to record what happened
