"""The hitl-client package (clients/python), the engine's side: a whole gated turn against the live portal."""

import logging
import threading
import time
from datetime import timedelta
from pathlib import Path

import hitl_client
import pytest
from django.core.management import CommandError, call_command
from hitl_client import GatedCall, HitlClient, HitlError, find_gate

from approvals.expiry.expire import expire_requests
from approvals.models import ApprovalRequest
from workspaces.services import workspace_set_plan

from .approvals.engine_support import decide, make_support_config
from .helpers import make_token, travel

RUN = {"run_id": "run_7", "thread_id": "thr_1", "caller": "support-bot"}


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


@pytest.fixture
def client(live_server, acme) -> HitlClient:
    return HitlClient(live_server.url, make_token(acme, engine="support-engine"))


class Turn:
    """Runs `client.gate_call` in a thread, the way an engine blocks on it, and hands back the verdict."""

    def __init__(self, client: HitlClient, served: dict, **call):
        self.asked = threading.Event()
        self.ran: list[str] = []
        self.approval: dict | None = None
        self.verdict = None

        def pending(approval: dict) -> None:
            self.approval = approval
            self.asked.set()

        def execute() -> str:
            self.ran.append(call["operation"])
            return "exec_1"

        def run() -> None:
            self.verdict = client.gate_call(
                served, GatedCall(**call), execute=execute, on_pending=pending, wait_timeout=20
            )
            self.asked.set()

        self.thread = threading.Thread(target=run)
        self.thread.start()
        assert self.asked.wait(timeout=20), "the engine never asked"

    def finish(self):
        self.thread.join(timeout=25)
        assert not self.thread.is_alive()
        return self.verdict


DELETE = {"kind": "delete", "target": "customer T-4821", "operation": "delete", "call_id": "call_1", **RUN}
REFUND = {
    "kind": "mcp_server",
    "target": "mcp_billing",
    "operation": "issue_refund",
    "call_id": "call_2",
    "summary": "Refund 49.00 USD",
    "arguments": {"ticket_id": "T-4821", "amount_cents": 4900},
    **RUN,
}


def test_it_logs_the_hitl_line_of_the_served_config(client, support, caplog):
    with caplog.at_level(logging.INFO, logger="hitl_client"):
        served = client.served(support.public_id)

    assert served["hitl"]["state"] == "active"
    assert f"HITL: ACTIVE — config approval rules gate the served turn ({support.public_id}@1)" in caplog.text


def test_it_runs_an_approved_call_and_reports_it_executed(client, bob, support):
    turn = Turn(client, client.served(support.public_id), **REFUND)
    assert turn.approval["status"] == "pending" and turn.ran == []  # nothing runs before a person answers
    assert turn.approval["arguments"] == REFUND["arguments"]

    decide(turn.approval["id"], bob, "approve")
    verdict = turn.finish()

    assert verdict.allowed and verdict.state == "approved"
    assert turn.ran == ["issue_refund"]
    stored = ApprovalRequest.objects.get(public_id=turn.approval["id"])
    assert (stored.execution_status, stored.execution_id) == ("executed", "exec_1")
    assert verdict.approval["execution"]["status"] == "executed"


def test_it_halts_a_rejected_call_and_passes_the_reviewers_reason_to_the_agent(client, bob, support):
    turn = Turn(client, client.served(support.public_id), **DELETE)

    decide(turn.approval["id"], bob, "reject", reason="This customer has an open legal hold.")
    verdict = turn.finish()

    assert not verdict.allowed and verdict.state == "rejected"
    assert "This customer has an open legal hold" in verdict.message
    assert "bob@acme.test" in verdict.message
    assert turn.ran == []
    assert ApprovalRequest.objects.get(public_id=turn.approval["id"]).execution_status == ""


def test_it_tells_the_agent_nobody_answered_when_the_request_expires(client, support):
    turn = Turn(client, client.served(support.public_id), **DELETE)

    with travel(timedelta(hours=25)):
        expire_requests(ApprovalRequest.objects.all())  # the sweep: wakes the long-poll like a decision
    verdict = turn.finish()

    assert not verdict.allowed and verdict.state == "expired"
    assert verdict.message.startswith("Nobody answered")
    assert "No person refused it" in verdict.message
    assert "rejected" not in verdict.message
    assert turn.ran == []


def test_it_proceeds_with_the_inert_notice_on_the_free_plan_and_stores_nothing(client, acme, support, caplog):
    workspace_set_plan(workspace=acme, plan="free")
    ran = []

    with caplog.at_level(logging.INFO, logger="hitl_client"):
        served = client.served(support.public_id)
        verdict = client.gate_call(served, GatedCall(**DELETE), execute=lambda: ran.append("delete"))

    assert verdict.allowed and verdict.state == "inert"
    assert ran == ["delete"]
    assert "HITL: inert (Free plan or no enabled rules)" in caplog.text
    assert not ApprovalRequest.objects.exists()


def test_it_lets_an_ungated_call_through_without_asking(client, support):
    served = client.served(support.public_id)

    verdict = client.gate_call(served, GatedCall(**{**REFUND, "target": "mcp_weather"}))

    assert verdict.allowed and verdict.state == "not_gated"
    assert not ApprovalRequest.objects.exists()


def test_it_asks_once_for_the_same_call_even_when_the_engine_asks_again(client, support):
    served = client.served(support.public_id)
    gate = find_gate(served, kind="delete", target="customer T-4821")
    first = client.request_approval(served, gate, GatedCall(**DELETE))
    again = client.request_approval(served, gate, GatedCall(**DELETE))  # e.g. after an engine restart
    other = client.request_approval(served, gate, GatedCall(**{**DELETE, "call_id": "call_9"}))

    assert first["id"] == again["id"] != other["id"]
    assert ApprovalRequest.objects.count() == 2


def test_it_trims_what_the_pass_information_level_does_not_allow(client, acme, alice):
    config = make_support_config(acme, alice, pass_information_level="none")
    served = client.served(config.public_id)
    gate = find_gate(served, kind="mcp_server", target="mcp_billing")
    approval = client.request_approval(served, gate, GatedCall(**REFUND))

    assert approval["summary"] is None and approval["arguments"] is None


def test_it_refuses_to_run_a_call_that_differs_from_the_approved_one(client, bob, support):
    served = client.served(support.public_id)
    approval = client.request_approval(served, served["gates"][1], GatedCall(**REFUND))
    decide(approval["id"], bob, "approve")
    approved = client.wait(approval["id"], 5)
    tampered = GatedCall(**{**REFUND, "arguments": {**REFUND["arguments"], "amount_cents": 1}})

    assert HitlClient.check_digest(served, approved, GatedCall(**REFUND))
    assert not HitlClient.check_digest(served, approved, tampered)


def test_it_runs_an_approved_call_whose_arguments_the_level_kept_from_the_portal(client, acme, alice, bob):
    # At level none the digest covers target and operation only: the arguments never left the engine.
    config = make_support_config(acme, alice, pass_information_level="none")
    served = client.served(config.public_id)
    turn = Turn(client, served, **REFUND)

    decide(turn.approval["id"], bob, "approve")
    verdict = turn.finish()

    assert verdict.state == "approved" and turn.ran == ["issue_refund"]


def test_it_gives_up_waiting_after_its_timeout_and_does_not_run_the_call(client, support):
    served = client.served(support.public_id)
    ran = []

    verdict = client.gate_call(served, GatedCall(**DELETE), execute=lambda: ran.append(1), wait_timeout=1)

    assert not verdict.allowed and verdict.state == "timeout"
    assert ran == []


def test_it_raises_the_portals_error_with_its_code(client):
    with pytest.raises(HitlError) as raised:
        client.served("cfg_doesnotexist00")

    assert raised.value.status == 404
    assert raised.value.code == "not_found"


def test_it_names_an_unreachable_portal():
    with pytest.raises(HitlError, match="unreachable"):
        HitlClient("http://127.0.0.1:9", "hitl_x", timeout=2, retry_for=0).served("cfg_x")


# --- find_gate: kind, match (* = Any), point, order -------------------------------------------


def _served(*gates) -> dict:
    return {"hitl": {"state": "active"}, "gates": [dict(g, enabled=True) for g in gates]}


def test_find_gate_matches_kind_target_and_point_in_order():
    served = _served(
        {"id": "rul_b", "kind": "mcp_server", "match": "*", "point": "entry", "order": 20},
        {"id": "rul_a", "kind": "mcp_server", "match": "mcp_billing", "point": "entry", "order": 10},
        {"id": "rul_x", "kind": "mcp_server", "match": "mcp_billing", "point": "exit", "order": 5},
        {"id": "rul_d", "kind": "delete", "match": "*", "point": "entry", "order": 1},
    )

    assert find_gate(served, kind="mcp_server", target="mcp_billing")["id"] == "rul_a"
    assert find_gate(served, kind="mcp_server", target="mcp_fs")["id"] == "rul_b"
    assert find_gate(served, kind="mcp_server", target="mcp_billing", point="exit")["id"] == "rul_x"
    assert find_gate(served, kind="cell", target="cell 3") is None
    assert find_gate({**served, "hitl": {"state": "inert"}}, kind="delete", target="x") is None


def test_the_idempotency_key_depends_on_run_thread_and_call():
    key = hitl_client.idempotency_key(run_id="r", thread_id="t", call_id="c")

    assert key == hitl_client.idempotency_key(run_id="r", thread_id="t", call_id="c")
    assert key != hitl_client.idempotency_key(run_id="r", thread_id="t", call_id="d")
    assert key != hitl_client.idempotency_key(run_id="r", thread_id="tc", call_id="")
    assert len(key) <= 255


def test_the_client_does_not_import_django():
    core = Path(hitl_client.__file__).parent
    sources = [
        (core / name).read_text(encoding="utf-8") for name in ("__init__.py", "_core.py", "_sync.py", "_async.py")
    ]

    assert not any("import django" in source or "from django" in source for source in sources)


# --- hitl demo-engine -------------------------------------------------------------------------


def test_demo_engine_resumes_on_approve_and_halts_visibly_on_reject(live_server, acme, bob, support, capsys):
    key = make_token(acme, engine="demo-engine")
    decided: list[str] = []

    def reviewer() -> None:
        # Approve the delete, then reject the refund, as a person at the queue would.
        deadline = time.monotonic() + 30
        while len(decided) < 2 and time.monotonic() < deadline:
            for approval in ApprovalRequest.objects.pending().order_by("created_at"):
                verdict = "approve" if approval.boundary == "delete" else "reject"
                decide(
                    approval.public_id, bob, verdict, reason="" if verdict == "approve" else "Refunds wait for Monday."
                )
                decided.append(verdict)
            time.sleep(0.1)

    person = threading.Thread(target=reviewer)
    person.start()
    call_command(
        "hitl", "demo-engine", "--url", live_server.url, "--key", key, "--config", support.public_id, "--wait", "20"
    )
    person.join(timeout=35)
    out = capsys.readouterr().out

    assert decided == ["approve", "reject"]
    assert "HITL: ACTIVE" in out
    assert "resumed (approved)" in out
    assert "reported outcome executed" in out
    assert "halted (rejected)" in out and "Refunds wait for Monday" in out
    assert "Turn 3" not in out  # the run stopped at the rejected refund
    delete = ApprovalRequest.objects.get(boundary="delete")
    assert delete.execution_status == "executed"


def test_demo_engine_runs_a_call_a_reviewer_approved_with_edits_and_goes_on(live_server, acme, alice, bob, capsys):
    from approvals.review.decide import approval_decide
    from rules import services as rule_services

    config = make_support_config(acme, alice)
    refunds = config.rules.get(kind="mcp_server")
    rule_services.rule_update(rule=refunds, allow_edit=True)
    rule_services.config_publish(config=config, user=alice)
    key = make_token(acme, engine="demo-engine")
    decided: list[str] = []

    def reviewer() -> None:  # approves the delete as proposed, the refund with a smaller amount
        deadline = time.monotonic() + 30
        while len(decided) < 2 and time.monotonic() < deadline:
            for approval in ApprovalRequest.objects.pending().order_by("created_at"):
                edited = {**approval.arguments, "amount_cents": 2500} if approval.boundary == "mcp_server" else None
                approval_decide(
                    approval=approval, user=bob, decision="approve", arguments=edited, edit=edited is not None
                )
                decided.append(approval.boundary)
            time.sleep(0.1)

    person = threading.Thread(target=reviewer)
    person.start()
    call_command(
        "hitl", "demo-engine", "--url", live_server.url, "--key", key, "--config", config.public_id,
        "--turns", "delete,mcp", "--wait", "20",
    )  # fmt: skip
    person.join(timeout=35)
    out = capsys.readouterr().out

    assert decided == ["delete", "mcp_server"]
    assert "edit_to_retry" not in out and "halted" not in out
    assert 'with the reviewer\'s edits: {"amount_cents": 2500, "ticket_id": "T-4821"}' in out
    assert "finished." in out
    refund = ApprovalRequest.objects.get(boundary="mcp_server")
    assert refund.execution_status == "executed"


def test_demo_engine_reports_a_token_cap_breach_and_proceeds_past_it(live_server, acme, bob, support, capsys):
    key = make_token(acme, engine="demo-engine")

    def reviewer() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            cap = ApprovalRequest.objects.pending().filter(kind="token_cap").first()
            if cap is not None:
                decide(cap.public_id, bob, "proceed")
                return
            time.sleep(0.1)

    person = threading.Thread(target=reviewer)
    person.start()
    call_command(
        "hitl", "demo-engine", "--url", live_server.url, "--key", key, "--config", support.public_id,
        "--turns", "token_cap", "--wait", "20",
    )  # fmt: skip
    person.join(timeout=35)
    out = capsys.readouterr().out

    assert "used 2,200 tokens against a cap of 1,000" in out
    assert "Proceed past cap" in out
    assert "finished" in out


def test_demo_engine_says_in_one_line_when_the_portal_refuses_its_key(live_server, support):
    with pytest.raises(CommandError, match="The portal refused: This token is unknown or has been revoked"):
        call_command(
            "hitl", "demo-engine", "--url", live_server.url, "--key", "hitl_nope", "--config", support.public_id
        )
