"""The conformance table through each adapter: the MCP gateway, LangGraph's Agent Inbox and the Agents SDK run
the gate cases that apply to them against the server as deployed, and the call runs (or not) and the model
is told what the table says.

Not here: `withdrawn` (an adapter's calls name no requester to take them back), `in_doubt` (each adapter
derives its own call ids, so the table's earlier registration is not theirs — the run-once kill tests
cover it: test_mcp_gateway.py, test_client_run_once.py), and questions
and plans (the adapters ask through the client's `ask`, run by tests/test_client_conformance.py).
"""

import asyncio
import sys
import threading
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TypedDict

import pytest
from agents import Agent, function_tool, set_tracing_disabled
from agents.testing import ScriptedModel, assistant_message, function_call
from django.db import connection
from hitl_client import AsyncHitlClient, HitlClient
from hitl_client.langgraph import HitlInbox
from hitl_client.mcp_gateway import Gateway, GatewayConfig
from hitl_client.openai_agents import HitlRunner
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt
from mcp import Client

from approvals.models import ApprovalRequest

from ..conformance import DEFAULTS, act, cases, wait_timeout, world
from ..helpers import make_token

UPSTREAM = str(Path(__file__).with_name("upstream_billing.py"))
RUN = DEFAULTS["run"]
set_tracing_disabled(True)  # no network: the SDK would export traces


def _gate_case(case: dict) -> bool:
    # Not a case whose call names the person it acts for: the adapters register calls of their own, for nobody.
    return (
        "call" in case
        and not any("started_before" in step for step in case.get("before", []))
        and "requested_by" not in case["call"]
    )


def _mcp_case(case: dict) -> bool:
    return _gate_case(case) and case["call"]["kind"] == "mcp_server"


class Person(threading.Thread):
    """Does the case's steps once its request pends (the adapter is waiting), until told to stop."""

    def __init__(self, case: dict, reviewer_api):
        super().__init__(daemon=True)
        self.case, self.reviewer_api = case, reviewer_api
        self.stop = threading.Event()
        self.start()

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                pending = ApprovalRequest.objects.filter(status="pending").values_list("public_id", flat=True).first()
                if pending:
                    for step in self.case["steps"]:
                        act(step, pending, reviewer_api=self.reviewer_api)
                    return
                time.sleep(0.05)
        finally:
            connection.close()  # this thread's own connection, so the test database can be dropped

    def finish(self) -> None:
        self.stop.set()
        self.join(timeout=30)


def _before(case: dict, alice_api) -> None:
    for step in case.get("before", []):
        if "halt_run" in step:
            assert alice_api.post("/api/v1/runs/halt", {"run_id": RUN["run_id"], **step["halt_run"]}).status_code in (
                200,
                201,
            )


def _told(expect: dict, words: str) -> None:
    assert expect["message"] in words, words
    if "message_not" in expect:
        assert expect["message_not"] not in words, words


# --- the MCP gateway ------------------------------------------------------------------------------


@pytest.mark.parametrize("case", cases(where=_mcp_case))
def test_the_mcp_gateway_does_and_says_what_the_table_says(
    case, live_server, acme, alice, engine_key, alice_api, bob_api, tmp_path, monkeypatch
):
    config = world(case, acme, alice)
    ledger = tmp_path / "ledger"
    ledger.touch()
    toml = tmp_path / "gateway.toml"
    toml.write_text(
        f"""
[portal]
url = "{live_server.url}"
config = "{config.public_id}"

[gateway]
caller = "{RUN["caller"]}"
run_id = "{RUN["run_id"]}"
wait_timeout_seconds = {wait_timeout(case)}

[servers.mcp_billing]
command = "{sys.executable}"
args = ["{UPSTREAM}", "{ledger}", "billing"]

[servers.mcp_tickets]
command = "{sys.executable}"
args = ["{UPSTREAM}", "{ledger}", "tickets"]
""",
        encoding="utf-8",
    )
    monkeypatch.setenv("HITL_ENGINE_KEY", engine_key)
    _before(case, alice_api)

    async def session():
        gateway = Gateway(GatewayConfig.load(toml))
        async with AsyncExitStack() as stack:
            await gateway.connect(stack)
            async with Client(gateway.server) as client:
                return await client.call_tool(case["call"]["operation"], case["call"]["arguments"])

    person = Person(case, bob_api)
    result = asyncio.run(session())
    person.finish()

    expect = case["expect"]
    ran = ledger.read_text().splitlines()
    if expect["runs"]:
        arguments = expect.get("arguments", case["call"]["arguments"])
        assert not result.is_error
        assert ran == [" ".join([case["call"]["operation"], *map(str, arguments.values())])]  # the upstream's ledger
    else:
        assert result.is_error and ran == []
        _told(expect, " ".join(block.text for block in result.content))
    if "outcome" in expect:
        assert ApprovalRequest.objects.get().execution_status == expect["outcome"]


# --- LangGraph (Agent Inbox interrupts) -----------------------------------------------------------


class State(TypedDict, total=False):
    told: str


def _graph(case: dict, ran: list):
    call = case["call"]

    def review(state: State) -> State:
        response = interrupt(
            [
                {
                    "action_request": {"action": call["operation"], "args": call["arguments"]},
                    "config": {"allow_accept": True, "allow_respond": True, "allow_edit": True, "allow_ignore": False},
                    "description": f"{call['operation']} on {call['target']}",
                }
            ]
        )[0]
        if response["type"] == "accept":
            ran.append(call["arguments"])
            return {"told": ""}
        if response["type"] == "edit":
            ran.append(response["args"]["args"])
            return {"told": ""}
        return {"told": response["args"]}

    graph = StateGraph(State)
    graph.add_node("review", review)
    graph.add_edge(START, "review")
    graph.add_edge("review", END)
    return graph.compile(checkpointer=InMemorySaver())


@pytest.mark.parametrize("case", cases(where=_gate_case))
def test_langgraph_does_and_says_what_the_table_says(case, live_server, acme, alice, engine_key, alice_api, bob_api):
    config = world(case, acme, alice)
    client = HitlClient(live_server.url, engine_key)
    call = case["call"]
    inbox = HitlInbox(
        client,
        client.served(config.public_id),
        caller=RUN["caller"],
        kinds={call["operation"]: call["kind"]},
        target=lambda action, args: call["target"],
        run_id=RUN["run_id"],
        wait_timeout=wait_timeout(case),
    )
    _before(case, alice_api)
    ran: list = []
    graph = _graph(case, ran)

    person = Person(case, bob_api)
    result = inbox.run(graph, {}, {"configurable": {"thread_id": RUN["thread_id"]}})
    person.finish()

    expect = case["expect"]
    if expect["runs"]:
        assert ran == [expect.get("arguments", call["arguments"])]
    else:
        assert ran == []
        if expect["state"] == "timeout":  # still paused at its interrupt: nothing resumed, nothing told yet
            assert graph.get_state({"configurable": {"thread_id": RUN["thread_id"]}}).interrupts
        else:
            _told(expect, result["told"])
    if "outcome" in expect:
        assert ApprovalRequest.objects.get().execution_status == expect["outcome"]


# --- the OpenAI Agents SDK ------------------------------------------------------------------------


@pytest.mark.parametrize("case", cases(where=_gate_case))
def test_the_agents_sdk_does_and_says_what_the_table_says(
    case, live_server, acme, alice, engine_key, alice_api, bob_api
):
    config = world(case, acme, alice)
    call = case["call"]
    ran: list = []

    async def tool(arguments: dict) -> str:
        ran.append(arguments)
        return "done"

    @function_tool(name_override=call["operation"], needs_approval=True, strict_mode=False)
    async def gated(ticket_id: str | None = None, amount_cents: int | None = None, table: str | None = None) -> str:
        """The case's call."""
        given = {"ticket_id": ticket_id, "amount_cents": amount_cents, "table": table}
        return await tool({key: value for key, value in given.items() if value is not None})

    model = ScriptedModel(
        [[function_call(call["operation"], call["arguments"], call_id=RUN["call_id"])], [assistant_message("Done.")]]
    )

    async def engine():
        client = AsyncHitlClient(live_server.url, engine_key)
        gates = HitlRunner(
            client,
            await client.served(config.public_id),
            caller=RUN["caller"],
            kinds={call["operation"]: call["kind"]},
            target=lambda tool_name, args: call["target"],
            wait_timeout=wait_timeout(case),
        )
        agent = Agent(name=RUN["thread_id"], model=model, tools=[gated])
        return await gates.run(agent, "Do the case's call", run_id=RUN["run_id"]), gates

    _before(case, alice_api)
    person = Person(case, bob_api)
    result, gates = asyncio.run(engine())
    person.finish()

    expect = case["expect"]
    if expect["runs"]:
        assert ran == [call["arguments"]] or (expect.get("edited") and ran == [])
    else:
        assert ran == []
    if expect["state"] == "timeout":
        assert result.interruptions  # still paused: nothing ran, nothing told
    elif not expect["runs"] or expect.get("edited"):
        # The SDK runs a call only as the model made it: an edit is told to the model to make again.
        told = [item for item in model.last_call.input if item.get("type") == "function_call_output"]
        words = told[-1]["output"]
        if expect.get("edited"):
            assert "Make the call again with exactly these arguments" in words
        else:
            _told(expect, words)
    if "outcome" in expect and not expect.get("edited"):
        assert ApprovalRequest.objects.get().execution_status == expect["outcome"]


@pytest.fixture
def engine_key(acme) -> str:
    return make_token(acme, engine="conformance-engine")
