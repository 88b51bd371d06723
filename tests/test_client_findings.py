"""Issue 36's findings, as an engine developer meets them through hitl_client against the server as deployed:
a shadow rule or a false condition lets the call run, a delete rule gates its operation, a halted run says
so, a forged answer is never run, an undeliverable request is not an expiry, four eyes is reachable."""

import threading
import time
from datetime import timedelta

import hitl_client
import pytest
from hitl_client import GatedCall, HitlClient
from hitl_client.receipts import ReceiptRefused, keys_of, verify_receipt

from approvals.expiry.undeliverable import approval_sweep_undeliverable
from approvals.models import ApprovalRequest

from .approvals.engine_support import decide
from .helpers import make_config, make_rule, make_token, publish, travel

RUN = {"run_id": "run_7", "thread_id": "thr_1", "caller": "support-bot"}
REFUND = {"kind": "mcp_server", "target": "mcp_billing", "operation": "issue_refund", "call_id": "call_1", **RUN}
DROP = {"kind": "delete", "target": "users", "operation": "drop_table", "call_id": "call_2", **RUN}


@pytest.fixture
def client(live_server, acme) -> HitlClient:
    return HitlClient(live_server.url, make_token(acme, engine="support-engine"))


def published(workspace, user, **rule) -> str:
    config = make_config(workspace, pass_information_level="full")
    make_rule(config, **rule)
    publish(config, user)
    return config.public_id


def in_thread(target, *args, **kwargs):
    """Run a blocking client call beside the test, which plays the reviewer; `.result()` joins it."""
    box: dict = {}
    thread = threading.Thread(target=lambda: box.update(result=target(*args, **kwargs)), daemon=True)
    thread.start()

    class Running:
        @staticmethod
        def result():
            thread.join(timeout=30)
            assert not thread.is_alive(), "the client never returned"
            return box["result"]

    return Running


def pending_id(timeout: float = 20) -> str:
    """The request the client registered, once it is in the queue."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = ApprovalRequest.objects.filter(status="pending").values_list("public_id", flat=True).first()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("the client never asked")


# 1 --------------------------------------------------------------------------------------------


def test_a_shadow_rule_lets_the_call_run_at_once_and_says_why(client, acme, alice):
    config = published(acme, alice, kind="mcp_server", match="mcp_billing", mode="shadow")
    ran = []

    verdict = client.gate_call(client.served(config), GatedCall(**REFUND), execute=lambda: ran.append("refund"))

    assert verdict.allowed and verdict.state == "allowed" and ran == ["refund"]
    assert "shadow mode" in verdict.message
    assert not ApprovalRequest.objects.exists()


def test_a_false_condition_lets_the_call_run_at_once_and_says_why(client, acme, alice):
    rule = {"kind": "mcp_server", "match": "mcp_billing", "condition": "arguments.amount_cents > 10000"}
    config = published(acme, alice, **rule)
    call = GatedCall(**REFUND, arguments={"amount_cents": 4900})
    ran = []

    verdict = client.gate_call(client.served(config), call, execute=lambda: ran.append("refund"))

    assert verdict.allowed and verdict.state == "allowed" and ran == ["refund"]
    assert "condition does not hold" in verdict.message


# 2 --------------------------------------------------------------------------------------------


def test_a_delete_rule_gates_its_operation_on_any_target(client, acme, alice, bob):
    config = published(acme, alice, kind="delete", match="drop_table")
    served = client.served(config)
    ran = []

    running = in_thread(
        client.gate_call, served, GatedCall(**DROP), execute=lambda: ran.append("drop"), wait_timeout=20
    )
    approval_id = pending_id()
    assert ran == []  # asked first: nothing ran before a person answered
    decide(approval_id, bob, "reject", reason="Not the users table.")
    verdict = running.result()

    assert verdict.state == "rejected" and ran == []
    assert served["gates"][0]["match_field"] == "operation"


def test_a_delete_rule_does_not_gate_another_operation(client, acme, alice):
    config = published(acme, alice, kind="delete", match="drop_table")
    served = client.served(config)

    assert hitl_client.find_gate(served, kind="delete", target="users", operation="drop_table") is not None
    assert hitl_client.find_gate(served, kind="delete", target="drop_table", operation="truncate_table") is None


def test_the_portal_refuses_a_registration_its_rule_does_not_take_in(engine_api, acme, alice):
    config = make_config(acme, pass_information_level="full")
    make_rule(config, kind="delete", match="drop_table")
    version = publish(config, alice)
    body = {
        "kind": "gate", "config_id": config.public_id, "config_version": version.number,
        "rule_id": version.rules[0]["id"], "target": "drop_table", "operation": "truncate_table", **RUN,
    }  # fmt: skip

    response = engine_api.post("/api/v1/approvals", body)

    assert response.status_code == 400
    assert "gates the delete operation 'drop_table'" in response.json()["error"]["fields"]["operation"]
    assert not ApprovalRequest.objects.exists()


# 3 --------------------------------------------------------------------------------------------


def test_a_question_of_a_halted_run_tells_the_agent_the_run_was_halted(client, acme, alice, alice_api):
    config = published(acme, alice, kind="mcp_server", match="mcp_billing")
    alice_api.post("/api/v1/runs/halt", {"run_id": "run_7", "reason": "Runaway refunds."})
    question = {"id": "env", "prompt": "Which environment?", "type": "text"}

    answers = client.ask(client.served(config), question, call_id="ask_1", wait_timeout=5, **RUN)

    assert answers.state == "halted" and answers.halted
    assert "halted this run: Runaway refunds" in answers.message and "Still waiting" not in answers.message


def test_a_plan_of_a_halted_run_is_not_sent_back_to_revise(client, acme, alice, alice_api):
    config = published(acme, alice, kind="mcp_server", match="mcp_billing")
    alice_api.post("/api/v1/runs/halt", {"run_id": "run_7", "reason": "Runaway refunds."})

    review = client.review_plan(client.served(config), "1. Refund.", call_id="plan_1", wait_timeout=5, **RUN)

    assert review.state == "halted" and not review.approved and not review.changes_requested
    assert "halted this run: Runaway refunds" in review.message and "Revise" not in review.message


# 4 --------------------------------------------------------------------------------------------


def test_a_rejected_answer_rewritten_to_approved_is_never_run(client, acme, alice, bob):
    config = published(acme, alice, kind="mcp_server", match="mcp_billing")
    served = client.served(config)
    call = GatedCall(**REFUND)
    asked = client.request_approval(
        served, hitl_client.find_gate(served, kind="mcp_server", target="mcp_billing"), call
    )
    decide(asked["id"], bob, "reject", reason="No.")
    genuine = client.get(asked["id"])
    forged = {**genuine, "status": "approved", "decision": {**genuine["decision"], "outcome": "approved"}}
    forged["decision"]["action"] = "resume"

    verdict = client.judged(served, forged, call)

    assert not verdict.allowed and verdict.state == "receipt_refused"
    assert "signed status is 'rejected', but the answer says 'approved'" in verdict.message


def test_a_receipt_of_another_request_is_named_plainly(client, acme, alice, bob):
    config = published(acme, alice, kind="mcp_server", match="mcp_billing")
    served = client.served(config)
    gate = hitl_client.find_gate(served, kind="mcp_server", target="mcp_billing")
    asked = client.request_approval(served, gate, GatedCall(**REFUND))
    decide(asked["id"], bob, "approve")
    approval = client.get(asked["id"])

    with pytest.raises(ReceiptRefused) as refused:
        verify_receipt(
            approval["receipt"], keys_of(client._call("GET", "/.well-known/jwks.json")[1]), approval_id="apr_x"
        )

    assert str(refused.value) == f"The receipt names request {asked['id']}, not apr_x."


# 8 --------------------------------------------------------------------------------------------


def test_an_undeliverable_request_reaches_the_agent_as_its_own_verdict(client, acme, alice):
    config = published(acme, alice, kind="mcp_server", match="mcp_billing", on_unreachable="reject")
    running = in_thread(client.gate_call, client.served(config), GatedCall(**REFUND), execute=lambda: None)
    pending_id()

    with travel(timedelta(seconds=601)):
        assert approval_sweep_undeliverable() == 1
    verdict = running.result()

    assert not verdict.allowed and verdict.state == "undeliverable"
    assert "Nobody could be reached" in verdict.message and "deadline" not in verdict.message


def test_a_gated_call_carries_who_the_run_acts_for_and_four_eyes_holds(client, acme, alice, bob, bob_api):
    config = published(acme, alice, kind="mcp_server", match="mcp_billing")
    served = client.served(config)
    call = GatedCall(**REFUND, requested_by="bob@acme.test")

    asked = client.request_approval(
        served, hitl_client.find_gate(served, kind="mcp_server", target="mcp_billing"), call
    )

    assert asked["requested_by"] == "bob@acme.test"
    own = bob_api.post(f"/api/v1/approvals/{asked['id']}/decision", {"decision": "approve"})
    assert own.status_code == 403  # the run acts for bob: another reviewer must approve it
    assert ApprovalRequest.objects.get(public_id=asked["id"]).status == "pending"
