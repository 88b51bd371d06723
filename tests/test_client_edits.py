"""hitl-client runs what was approved: a reviewer's edit of the arguments, checked by its digest, reported."""

import asyncio

import pytest
from hitl_client import AsyncHitlClient, GatedCall, HitlClient, call_digest

from approvals.models import ApprovalRequest

from .adapters.support import Reviewer, make_billing_config
from .helpers import make_token

PROPOSED = {"ticket_id": "T-4821", "amount_cents": 4900}
EDITED = {"ticket_id": "T-4821", "amount_cents": 2500}
SCHEMA = {
    "type": "object",
    "properties": {"ticket_id": {"type": "string"}, "amount_cents": {"type": "integer", "minimum": 1}},
    "required": ["ticket_id", "amount_cents"],
}
REFUND = {
    "kind": "mcp_server",
    "target": "mcp_billing",
    "operation": "issue_refund",
    "run_id": "run_e",
    "thread_id": "thr_e",
    "call_id": "call_e",
    "caller": "support-bot",
    "arguments": PROPOSED,
    "arguments_schema": SCHEMA,
}


@pytest.fixture
def billing(acme, alice):
    return make_billing_config(acme, alice)


@pytest.fixture
def client(live_server, acme) -> HitlClient:
    return HitlClient(live_server.url, make_token(acme, engine="support-engine"))


def test_an_edited_approval_runs_the_edited_arguments_and_reports_their_digest(client, billing, bob_api):
    served = client.served(billing.public_id)
    ran = []

    reviewer = Reviewer(bob_api, "approve", body={"arguments": EDITED})
    verdict = client.gate_call(served, GatedCall(**REFUND), execute=lambda arguments: ran.append(arguments) or "re_1",
                               wait_timeout=20)  # fmt: skip
    [decided] = reviewer.finish()

    assert ran == [EDITED]  # never the proposal
    assert verdict.allowed and verdict.edited and verdict.arguments == EDITED
    assert '"amount_cents": 2500' in verdict.message
    approved_digest = call_digest(target="mcp_billing", operation="issue_refund", arguments=EDITED)
    assert decided["decision"]["call_digest"] == approved_digest == verdict.call_digest
    assert decided["arguments"] == PROPOSED  # the request keeps the proposal
    execution = verdict.approval["execution"]
    assert execution["status"] == "executed" and execution.get("digest_matches") is not False
    stored = ApprovalRequest.objects.get(public_id=decided["id"])
    assert stored.execution_status == "executed"


def test_an_unedited_approval_runs_the_proposal(client, billing, bob_api):
    served = client.served(billing.public_id)
    ran = []

    reviewer = Reviewer(bob_api, "approve")
    verdict = client.gate_call(served, GatedCall(**REFUND), execute=ran.append, wait_timeout=20)
    reviewer.finish()

    assert ran == [PROPOSED] and verdict.state == "approved" and not verdict.edited


def test_an_execute_that_takes_no_arguments_never_runs_the_proposal_of_an_edited_call(client, billing, bob_api):
    served = client.served(billing.public_id)
    ran = []

    reviewer = Reviewer(bob_api, "approve", body={"arguments": EDITED})
    verdict = client.gate_call(served, GatedCall(**REFUND), execute=lambda: ran.append("proposal"), wait_timeout=20)
    [decided] = reviewer.finish()

    assert ran == []
    assert not verdict.allowed and verdict.state == "edit_to_retry"
    assert verdict.message.endswith('{"amount_cents": 2500, "ticket_id": "T-4821"}')
    assert ApprovalRequest.objects.get(public_id=decided["id"]).execution_status == "failed"


def test_the_async_client_runs_the_edit_too(live_server, acme, billing, bob_api):
    ran = []

    async def refund(arguments):
        ran.append(arguments)
        return "re_2"

    async def engine():
        client = AsyncHitlClient(live_server.url, make_token(acme, engine="support-engine"))
        served = await client.served(billing.public_id)
        return await client.gate_call(served, GatedCall(**REFUND), execute=refund, wait_timeout=20)

    reviewer = Reviewer(bob_api, "approve", body={"arguments": EDITED})
    verdict = asyncio.run(engine())
    reviewer.finish()

    assert ran == [EDITED] and verdict.approval["execution"]["status"] == "executed"
