"""hitl_client.langgraph: a real LangGraph graph paused by interrupt(), answered by a person through the portal."""

import asyncio
import threading
from datetime import timedelta
from typing import TypedDict

import pytest
from hitl_client import AsyncHitlClient, HitlClient
from hitl_client.langgraph import HitlInbox
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from approvals.expiry.expire import expire_requests
from approvals.models import ApprovalRequest

from ..approvals.engine_support import make_support_config
from ..helpers import make_token, travel
from .support import Reviewer, make_billing_config, wait_until_pending


class Ticket(TypedDict, total=False):
    customer_id: str
    outcome: str


def build_graph(checkpointer, crm: list[str]):
    """A support graph whose delete step asks for review in Agent Inbox's shape before it touches the CRM."""

    def review(state: Ticket) -> Ticket:
        response = interrupt(
            [
                {
                    "action_request": {"action": "delete_customer", "args": {"customer_id": state["customer_id"]}},
                    "config": {"allow_accept": True, "allow_respond": True, "allow_edit": False, "allow_ignore": True},
                    "description": f"Delete customer {state['customer_id']} and their tickets",
                }
            ]
        )[0]
        if response["type"] == "accept":
            crm.remove(state["customer_id"])
            return {"outcome": "deleted"}
        return {"outcome": f"kept: {response['args']}"}

    graph = StateGraph(Ticket)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=checkpointer)


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


@pytest.fixture
def engine_key(acme) -> str:
    return make_token(acme, engine="support-engine")


def inbox_for(client, served, **options) -> HitlInbox:
    return HitlInbox(
        client,
        served,
        caller="support-bot",
        kinds={"delete_customer": "delete"},
        target=lambda action, args: f"customer {args['customer_id']}",
        **options,
    )


THREAD = {"configurable": {"thread_id": "thr_lg_1"}}


def test_an_approved_interrupt_resumes_the_graph_which_runs_the_call(live_server, engine_key, support, bob_api):
    crm = ["T-4821"]
    client = HitlClient(live_server.url, engine_key)
    inbox = inbox_for(client, client.served(support.public_id), wait_timeout=20)

    reviewer = Reviewer(bob_api, "approve")
    result = inbox.run(build_graph(InMemorySaver(), crm), {"customer_id": "T-4821"}, THREAD)
    [decided] = reviewer.finish()

    assert result["outcome"] == "deleted" and crm == []
    assert decided["target"] == "customer T-4821" and decided["operation"] == "delete_customer"
    assert decided["arguments"] == {"customer_id": "T-4821"} and decided["thread_id"] == "thr_lg_1"
    assert ApprovalRequest.objects.get(public_id=decided["id"]).execution_status == "executed"


def test_a_rejected_interrupt_resumes_the_graph_with_the_reviewers_reason(live_server, engine_key, support, bob_api):
    crm = ["T-4821"]

    async def engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        inbox = inbox_for(client, await client.served(support.public_id), wait_timeout=20)
        return await inbox.arun(build_graph(InMemorySaver(), crm), {"customer_id": "T-4821"}, THREAD)

    reviewer = Reviewer(bob_api, "reject", "This customer has an open legal hold.")
    result = asyncio.run(engine())
    reviewer.finish()

    assert result["outcome"].startswith("kept: ") and "This customer has an open legal hold" in result["outcome"]
    assert crm == ["T-4821"]


def test_a_restarted_engine_waits_on_the_same_request_and_resumes_the_graph(live_server, engine_key, support, bob_api):
    crm = ["T-4821"]
    checkpointer = InMemorySaver()  # stands in for a durable checkpointer both engine processes share
    first = HitlClient(live_server.url, engine_key)
    paused = inbox_for(first, first.served(support.public_id), wait_timeout=1).run(
        build_graph(checkpointer, crm), {"customer_id": "T-4821"}, THREAD
    )
    [asked] = wait_until_pending(bob_api)
    assert "outcome" not in paused and crm == ["T-4821"]  # the first engine went away with the graph still paused

    second = HitlClient(live_server.url, engine_key)  # a new engine: new client, new graph object
    reviewer = Reviewer(bob_api, "approve")
    result = inbox_for(second, second.served(support.public_id), wait_timeout=20).run(
        build_graph(checkpointer, crm), {"customer_id": "T-4821"}, THREAD
    )
    [decided] = reviewer.finish()

    assert decided["id"] == asked["id"] and ApprovalRequest.objects.count() == 1
    assert result["outcome"] == "deleted" and crm == []


def test_an_interrupt_no_rule_gates_is_accepted_without_asking(live_server, engine_key, support):
    crm = ["T-4821"]
    client = HitlClient(live_server.url, engine_key)
    inbox = inbox_for(client, client.served(support.public_id), wait_timeout=5)
    inbox.kinds = {"delete_customer": "cell"}  # support gates deletes and mcp_billing, not cells

    result = inbox.run(build_graph(InMemorySaver(), crm), {"customer_id": "T-4821"}, THREAD)

    assert result["outcome"] == "deleted" and [v.state for v in inbox.verdicts] == ["not_gated"]
    assert not ApprovalRequest.objects.exists()


def test_an_expired_request_resumes_the_graph_saying_nobody_answered(live_server, engine_key, support, bob_api):
    crm = ["T-4821"]
    client = HitlClient(live_server.url, engine_key)
    inbox = inbox_for(client, client.served(support.public_id), wait_timeout=20)

    def sweep_when_asked() -> None:
        wait_until_pending(bob_api)
        with travel(timedelta(hours=25)):
            expire_requests(ApprovalRequest.objects.all())

    sweeper = threading.Thread(target=sweep_when_asked)
    sweeper.start()
    result = inbox.run(build_graph(InMemorySaver(), crm), {"customer_id": "T-4821"}, THREAD)
    sweeper.join()

    assert result["outcome"].startswith("kept: Nobody answered") and crm == ["T-4821"]
    assert "rejected" not in result["outcome"]


# --- HumanInterrupt mapped fully: edits typed, a respond-only interrupt as a question, ignore ----------


def build_refund_graph(checkpointer, ledger: list[dict]):
    """A billing graph whose refund step allows edits; its ask step only lets a person respond."""

    def refund(state: Ticket) -> Ticket:
        response = interrupt(
            {
                "action_request": {"action": "issue_refund", "args": {"ticket_id": "T-4821", "amount_cents": 4900}},
                "config": {"allow_accept": True, "allow_edit": True, "allow_respond": True, "allow_ignore": False},
                "description": "Refund ticket T-4821",
            }
        )
        if response["type"] == "edit":
            ledger.append(response["args"])
            return {"outcome": "refunded as edited"}
        if response["type"] == "accept":
            ledger.append({"action": "issue_refund", "args": {"ticket_id": "T-4821", "amount_cents": 4900}})
            return {"outcome": "refunded"}
        return {"outcome": f"not refunded: {response['args']}"}

    graph = StateGraph(Ticket)
    graph.add_node("refund", refund)
    graph.add_edge(START, "refund")
    graph.add_edge("refund", END)
    return graph.compile(checkpointer=checkpointer)


def build_ask_graph(checkpointer, *, allow_ignore: bool):
    def ask(state: Ticket) -> Ticket:
        response = interrupt(
            {
                "action_request": {"action": "ask_customer_tier", "args": {}},
                "config": {"allow_accept": False, "allow_edit": False, "allow_respond": True,
                           "allow_ignore": allow_ignore},
                "description": "Which support tier is customer T-4821 on?",
            }
        )  # fmt: skip
        return {"outcome": f"{response['type']}: {response['args']}"}

    graph = StateGraph(Ticket)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=checkpointer)


@pytest.fixture
def billing(acme, alice):
    return make_billing_config(acme, alice)


EDITED = {"ticket_id": "T-4821", "amount_cents": 2500}


def test_an_edited_approval_resumes_the_graph_with_the_edited_arguments_typed(live_server, engine_key, billing,
                                                                              bob_api):  # fmt: skip
    ledger: list[dict] = []
    client = HitlClient(live_server.url, engine_key)
    inbox = HitlInbox(client, client.served(billing.public_id), caller="billing-bot",
                      kinds={"issue_refund": "mcp_server"}, target=lambda action, args: "mcp_billing",
                      wait_timeout=20)  # fmt: skip

    reviewer = Reviewer(bob_api, "approve", body={"arguments": EDITED})
    result = inbox.run(build_refund_graph(InMemorySaver(), ledger), {}, THREAD)
    [decided] = reviewer.finish()

    assert result["outcome"] == "refunded as edited"
    assert ledger == [{"action": "issue_refund", "args": EDITED}]
    assert isinstance(ledger[0]["args"]["amount_cents"], int)  # a number, not Agent Inbox's "2500"
    stored = ApprovalRequest.objects.get(public_id=decided["id"])
    assert stored.execution_status == "executed"


def test_an_interrupt_that_only_allows_a_response_is_asked_as_a_question(live_server, engine_key, support, bob_api):
    client = HitlClient(live_server.url, engine_key)
    inbox = inbox_for(client, client.served(support.public_id), wait_timeout=20)

    reviewer = Reviewer(bob_api, "answer", body={"answers": {"response": "Enterprise, with a 4-hour SLA."}})
    result = inbox.run(build_ask_graph(InMemorySaver(), allow_ignore=False), {}, THREAD)
    [decided] = reviewer.finish()

    assert result["outcome"] == "response: Enterprise, with a 4-hour SLA."
    assert decided["kind"] == "question" and decided["questions"][0]["prompt"].startswith("Which support tier")
    assert [answers.state for answers in inbox.answers] == ["answered"] and inbox.verdicts == []


def test_a_declined_question_resumes_the_graph_with_ignore_where_allowed(live_server, engine_key, support, bob_api):
    client = HitlClient(live_server.url, engine_key)
    inbox = inbox_for(client, client.served(support.public_id), wait_timeout=20)

    reviewer = Reviewer(bob_api, "decline", "Not ours to say.")
    result = inbox.run(build_ask_graph(InMemorySaver(), allow_ignore=True), {}, THREAD)
    reviewer.finish()

    assert result["outcome"] == "ignore: None"


def test_the_asyncio_inbox_asks_a_respond_only_interrupt_too(live_server, engine_key, support, bob_api):
    async def engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        inbox = inbox_for(client, await client.served(support.public_id), wait_timeout=20)
        return await inbox.arun(build_ask_graph(InMemorySaver(), allow_ignore=False), {}, THREAD)

    reviewer = Reviewer(bob_api, "decline", "Not ours to say.")
    result = asyncio.run(engine())
    reviewer.finish()

    # No ignore allowed: the graph hears that the person declined, in words that are not an expiry's.
    assert result["outcome"].startswith("response: bob@acme.test declined to answer: Not ours to say")
