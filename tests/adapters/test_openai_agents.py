"""hitl_client.openai_agents: an Agents SDK run (scripted model) whose approvals a person answers in the portal."""

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from agents import Agent, RunState, function_tool, set_tracing_disabled
from agents.mcp import MCPServerStdio
from agents.testing import ScriptedModel, assistant_message, function_call
from hitl_client import AsyncHitlClient
from hitl_client.openai_agents import HitlRunner

from approvals.models import ApprovalRequest

from ..approvals.engine_support import make_support_config
from ..helpers import make_token
from .support import Reviewer, make_billing_config, wait_until_pending

UPSTREAM = str(Path(__file__).with_name("upstream_billing.py"))
set_tracing_disabled(True)  # no network: the SDK would export traces


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


@pytest.fixture
def engine_key(acme) -> str:
    return make_token(acme, engine="support-engine")


def crm_agent(model, crm: list[str]) -> Agent:
    @function_tool(needs_approval=True)
    def delete_customer(customer_id: str) -> str:
        """Delete a customer record."""
        crm.remove(customer_id)
        return f"Deleted {customer_id}."

    return Agent(name="support-bot", model=model, tools=[delete_customer])


def runner(client, served, **options) -> HitlRunner:
    return HitlRunner(
        client,
        served,
        caller="support-bot",
        kinds={"delete_customer": "delete"},
        target=lambda tool, args: f"customer {args['customer_id']}",
        **options,
    )


def delete_script(*, call_id: str = "call_del_1") -> ScriptedModel:
    return ScriptedModel(
        [
            [function_call("delete_customer", {"customer_id": "T-4821"}, call_id=call_id)],
            [assistant_message("Customer T-4821 deleted.")],
        ]
    )


def test_an_approved_tool_call_runs_and_its_outcome_is_reported(live_server, engine_key, support, bob_api):
    crm, model = ["T-4821"], delete_script()

    async def engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        gates = runner(client, await client.served(support.public_id), wait_timeout=20)
        return await gates.run(crm_agent(model, crm), "Delete customer T-4821", run_id="conv_42")

    reviewer = Reviewer(bob_api, "approve")
    result = asyncio.run(engine())
    [decided] = reviewer.finish()

    assert crm == [] and result.final_output == "Customer T-4821 deleted."
    assert (decided["target"], decided["operation"], decided["run_id"]) == (
        "customer T-4821",
        "delete_customer",
        "conv_42",
    )
    assert decided["arguments"] == {"customer_id": "T-4821"}
    stored = ApprovalRequest.objects.get(public_id=decided["id"])
    assert (stored.execution_status, stored.execution_id) == ("executed", "call_del_1")


def test_a_gated_mcp_server_call_is_rejected_with_the_reviewers_reason(
    live_server, engine_key, support, bob_api, tmp_path
):
    ledger = tmp_path / "ledger"
    model = ScriptedModel(
        [
            [function_call("lookup_ticket", {"ticket_id": "T-4821"}, call_id="call_look")],
            [function_call("issue_refund", {"ticket_id": "T-4821", "amount_cents": 4900}, call_id="call_ref")],
            [assistant_message("I could not refund it.")],
        ]
    )

    async def engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        gates = runner(client, await client.served(support.public_id), wait_timeout=20)
        params = {"command": sys.executable, "args": [UPSTREAM, str(ledger)]}
        # Two servers on the same upstream: the rules gate mcp_billing, not mcp_tickets.
        billing = MCPServerStdio(
            params,
            name="mcp_billing",
            tool_filter={"allowed_tool_names": ["issue_refund"]},
            require_approval=gates.mcp_server("mcp_billing"),
        )
        tickets = MCPServerStdio(
            params,
            name="mcp_tickets",
            tool_filter={"allowed_tool_names": ["lookup_ticket"]},
            require_approval=gates.mcp_server("mcp_tickets"),
        )
        async with billing, tickets:
            agent = Agent(name="support-bot", model=model, mcp_servers=[tickets, billing])
            return await gates.run(agent, "Refund ticket T-4821", run_id="conv_43"), gates

    reviewer = Reviewer(bob_api, "reject", "Refunds over 40 USD need the finance lead.")
    result, gates = asyncio.run(engine())
    [decided] = reviewer.finish()

    assert (decided["target"], decided["operation"]) == ("mcp_billing", "issue_refund")
    assert ledger.read_text().splitlines() == ["lookup_ticket T-4821"]  # the refund never reached the server
    told = [item for item in model.last_call.input if item.get("type") == "function_call_output"]
    assert "Refunds over 40 USD need the finance lead" in told[-1]["output"]
    assert [verdict.state for verdict in gates.verdicts] == ["rejected"]
    assert result.final_output == "I could not refund it."


def test_a_restarted_engine_answers_the_saved_run_from_the_same_request(live_server, engine_key, support, bob_api):
    crm = ["T-4821"]

    async def first_engine() -> str:
        client = AsyncHitlClient(live_server.url, engine_key)
        gates = runner(client, await client.served(support.public_id), wait_timeout=1)
        paused = await gates.run(crm_agent(delete_script(), crm), "Delete customer T-4821", run_id="conv_44")
        assert paused.interruptions  # nobody answered within a second: the run stays paused
        return paused.to_state().to_string()

    saved = asyncio.run(first_engine())
    [asked] = wait_until_pending(bob_api)

    async def second_engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        agent = crm_agent(ScriptedModel([[assistant_message("Customer T-4821 deleted.")]]), crm)
        state = await RunState.from_string(agent, saved)
        gates = runner(client, await client.served(support.public_id), wait_timeout=20)
        return await gates.run(agent, state, run_id="conv_44")

    reviewer = Reviewer(bob_api, "approve")
    result = asyncio.run(second_engine())
    [decided] = reviewer.finish()

    assert decided["id"] == asked["id"] and ApprovalRequest.objects.count() == 1
    assert crm == [] and result.final_output == "Customer T-4821 deleted."


def test_at_level_summary_the_request_carries_a_summary_and_never_the_arguments(live_server, engine_key, acme, alice,
                                                                                 bob_api):  # fmt: skip
    config = make_support_config(acme, alice, pass_information_level="summary")
    crm = ["T-4821"]

    async def engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        gates = runner(client, await client.served(config.public_id), wait_timeout=20)
        return await gates.run(crm_agent(delete_script(), crm), "Delete customer T-4821", run_id="conv_45")

    reviewer = Reviewer(bob_api, "approve")
    asyncio.run(engine())
    [decided] = reviewer.finish()

    assert decided["summary"] == "delete_customer on customer T-4821" and decided["arguments"] is None
    assert crm == []  # the digest covers target and operation at this level, and it matched


def test_a_restarted_run_never_runs_an_approved_call_that_was_already_executed(
    live_server, engine_key, support, bob_api, caplog
):
    deleted: list[str] = []
    crm = ["T-4821"]

    async def first_engine() -> str:
        client = AsyncHitlClient(live_server.url, engine_key)
        gates = runner(client, await client.served(support.public_id), wait_timeout=1)
        paused = await gates.run(crm_agent(delete_script(), crm), "Delete customer T-4821", run_id="conv_46")
        return paused.to_state().to_string()  # saved while it waits for a person

    saved = asyncio.run(first_engine())
    wait_until_pending(bob_api)

    async def resumed_engine(model: ScriptedModel):
        """The saved run resumed; it ends (or crashes) before it saves again, so a restart resumes the same state."""
        client = AsyncHitlClient(live_server.url, engine_key)
        agent = crm_agent(model, crm)
        original = agent.tools[0].on_invoke_tool

        async def counted(ctx, args):
            deleted.append(args)
            return await original(ctx, args)

        agent.tools[0].on_invoke_tool = counted
        state = await RunState.from_string(agent, saved)
        gates = runner(client, await client.served(support.public_id), wait_timeout=20)
        return await gates.run(agent, state, run_id="conv_46"), gates

    reviewer = Reviewer(bob_api, "approve")
    asyncio.run(resumed_engine(ScriptedModel([[assistant_message("Customer T-4821 deleted.")]])))
    [decided] = reviewer.finish()
    assert len(deleted) == 1 and crm == []
    assert ApprovalRequest.objects.get(public_id=decided["id"]).execution_status == "executed"

    crm.append("T-4821")  # were the delete run again, this record would go
    model = ScriptedModel([[assistant_message("It was deleted before.")]])
    with caplog.at_level("WARNING", logger="hitl_client"):
        result, gates = asyncio.run(resumed_engine(model))

    assert len(deleted) == 1 and crm == ["T-4821"]  # not run again
    [verdict] = gates.verdicts
    assert verdict.state == "already_executed" and verdict.result["status"] == "executed"
    told = [item for item in model.last_call.input if item.get("type") == "function_call_output"]
    assert "already executed" in told[-1]["output"]
    assert any("already reported executed" in record.getMessage() for record in caplog.records)
    assert result.final_output == "It was deleted before."
    assert ApprovalRequest.objects.count() == 1


# --- ask_human, and approvals with edits ----------------------------------------------------------

ASKED = {
    "title": "Refund ticket T-4821",
    "questions": [
        {"id": "amount", "prompt": "Refund how much?", "type": "choice", "options": ["full", "half"], "multi": None,
         "recommended": 0},
        {"id": "why", "prompt": "Why?", "type": "text", "options": None, "multi": None, "recommended": None},
    ],
}  # fmt: skip


def test_the_model_asks_people_with_ask_human_and_reads_their_answers(live_server, engine_key, support, bob_api):
    model = ScriptedModel(
        [
            [function_call("ask_human", ASKED, call_id="call_ask_1")],
            [assistant_message("Refunding half.")],
        ]
    )

    async def engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        gates = runner(client, await client.served(support.public_id), wait_timeout=20)
        agent = Agent(name="support-bot", model=model, tools=[gates.ask_human()])
        return await gates.run(agent, "Refund ticket T-4821", run_id="conv_46")

    reviewer = Reviewer(bob_api, "answer", body={"answers": {"amount": "half", "why": "Late by two days."}})
    result = asyncio.run(engine())
    [decided] = reviewer.finish()

    told = [item for item in model.last_call.input if item.get("type") == "function_call_output"]
    assert "bob@acme.test answered:" in told[-1]["output"]
    assert "- Refund how much? (amount): half" in told[-1]["output"] and "Late by two days." in told[-1]["output"]
    assert (decided["kind"], decided["run_id"], decided["thread_id"]) == ("question", "conv_46", "support-bot")
    assert [option["value"] for option in decided["questions"][0]["options"]] == ["full", "half"]
    assert result.final_output == "Refunding half."


def test_ask_human_takes_empty_choice_fields_on_a_question_that_is_not_a_choice(
    live_server, engine_key, support, bob_api
):
    # What models send: every field present (the strict schema), empty where it does not apply.
    asked = {
        "title": "Refund ticket T-4821",
        "questions": [
            {"id": "cents", "prompt": "Refund how many cents?", "type": "number", "options": [], "multi": False,
             "recommended": None},
            {"id": "note", "prompt": "Anything to add?", "type": "text", "options": [], "multi": None,
             "recommended": None},
        ],
    }  # fmt: skip
    model = ScriptedModel([[function_call("ask_human", asked, call_id="call_ask_3")], [assistant_message("OK.")]])

    async def engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        gates = runner(client, await client.served(support.public_id), wait_timeout=20)
        agent = Agent(name="support-bot", model=model, tools=[gates.ask_human()])
        return await gates.run(agent, "Refund ticket T-4821", run_id="conv_48")

    reviewer = Reviewer(bob_api, "answer", body={"answers": {"cents": 1500, "note": "Apologise."}})
    asyncio.run(engine())
    [decided] = reviewer.finish()

    assert [question["type"] for question in decided["questions"]] == ["number", "text"]
    assert all("options" not in question or not question["options"] for question in decided["questions"])
    told = [item for item in model.last_call.input if item.get("type") == "function_call_output"]
    assert "- Refund how many cents? (cents): 1500" in told[-1]["output"]


def test_a_declined_ask_human_tells_the_model_so_in_other_words_than_an_expiry(live_server, engine_key, support,
                                                                               bob_api):  # fmt: skip
    model = ScriptedModel([[function_call("ask_human", ASKED, call_id="call_ask_2")], [assistant_message("OK.")]])

    async def engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        gates = runner(client, await client.served(support.public_id), wait_timeout=20)
        agent = Agent(name="support-bot", model=model, tools=[gates.ask_human()])
        return await gates.run(agent, "Refund ticket T-4821", run_id="conv_47")

    reviewer = Reviewer(bob_api, "decline", "Finance decides this, not support.")
    asyncio.run(engine())
    reviewer.finish()

    told = [item for item in model.last_call.input if item.get("type") == "function_call_output"]
    assert "declined to answer: Finance decides this, not support" in told[-1]["output"]
    assert "Nobody answered" not in told[-1]["output"]


def test_an_edited_approval_is_told_to_the_model_and_its_call_again_runs_on_the_same_approval(
    live_server, engine_key, acme, alice, bob_api
):
    config = make_billing_config(acme, alice)
    refunds: list[int] = []

    @function_tool(needs_approval=True)
    def issue_refund(ticket_id: str, amount_cents: int) -> str:
        """Refund a ticket's charge."""
        refunds.append(amount_cents)
        return f"Refunded {amount_cents} cents on {ticket_id}."

    model = ScriptedModel(
        [
            [function_call("issue_refund", {"ticket_id": "T-4821", "amount_cents": 4900}, call_id="call_ref_1")],
            [function_call("issue_refund", {"ticket_id": "T-4821", "amount_cents": 2500}, call_id="call_ref_2")],
            [assistant_message("Refunded 25.00 USD, as approved.")],
        ]
    )

    async def engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        gates = HitlRunner(client, await client.served(config.public_id), caller="billing-bot",
                           kinds={"issue_refund": "mcp_server"}, target=lambda tool, args: "mcp_billing",
                           wait_timeout=20)  # fmt: skip
        agent = Agent(name="billing-bot", model=model, tools=[issue_refund])
        return await gates.run(agent, "Refund ticket T-4821", run_id="conv_48"), gates

    reviewer = Reviewer(bob_api, "approve", body={"arguments": {"ticket_id": "T-4821", "amount_cents": 2500}})
    result, gates = asyncio.run(engine())
    [decided] = reviewer.finish()

    assert refunds == [2500]  # the proposal never ran; the edit ran once
    told = [item for item in model.last_call.input if item.get("type") == "function_call_output"]
    assert (
        'Make the call again with exactly these arguments: {"amount_cents": 2500, "ticket_id": "T-4821"}'
        in (told[0]["output"])
    )
    assert ApprovalRequest.objects.count() == 1  # the second call ran on the reviewer's approval
    stored = ApprovalRequest.objects.get(public_id=decided["id"])
    assert (stored.execution_status, stored.execution_id) == ("executed", "call_ref_2")
    assert result.final_output == "Refunded 25.00 USD, as approved."
    assert [verdict.state for verdict in gates.verdicts] == ["edit_to_retry"]


def test_the_offline_recipe_in_the_docs_runs_as_written(live_server, engine_key, support, bob_api):
    docs = (Path(__file__).resolve().parents[2] / "docs" / "adapters.md").read_text(encoding="utf-8")
    [recipe] = [block for block in docs.split("```python\n")[1:] if "ScriptedModel(" in block]
    script = recipe.split("```", 1)[0]
    env = {**os.environ, "HITL_URL": live_server.url, "HITL_ENGINE_KEY": engine_key, "HITL_CONFIG": support.public_id}

    reviewer = Reviewer(bob_api, "approve")
    ran = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    [decided] = reviewer.finish()

    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "Customer T-4821 deleted. Left in the CRM: []"
    assert (decided["target"], decided["run_id"]) == ("customer T-4821", "offline-demo")
