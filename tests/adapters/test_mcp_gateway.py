"""hitl-mcp-gateway: real upstream MCP servers (stdio) behind the gateway, driven by the mcp SDK's client."""

import asyncio
import logging
import os
import socket
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from datetime import timedelta
from pathlib import Path

import mcp_types as types
import pytest
from hitl_client.mcp_gateway import Gateway, GatewayConfig, GatewayConfigError
from mcp import Client, StdioServerParameters

from approvals.expiry.expire import expire_requests
from approvals.models import ApprovalRequest
from workspaces.services import workspace_set_plan

from ..approvals.engine_support import make_support_config
from ..helpers import make_token, travel
from .support import Reviewer, make_billing_config, wait_until_pending

UPSTREAM = str(Path(__file__).with_name("upstream_billing.py"))
REFUND = {"ticket_id": "T-4821", "amount_cents": 4900}


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)  # gates mcp_billing; nothing gates mcp_tickets


@pytest.fixture
def engine_key(acme) -> str:
    return make_token(acme, engine="mcp-gateway")


@pytest.fixture
def ledger(tmp_path) -> Path:
    path = tmp_path / "ledger"
    path.touch()
    return path


@pytest.fixture
def gateway_toml(tmp_path, live_server, support, ledger) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(
        f"""
[portal]
url = "{live_server.url}"
config = "{support.public_id}"

[gateway]
caller = "desktop-agent"
wait_timeout_seconds = 20

[servers.mcp_billing]
command = "{sys.executable}"
args = ["{UPSTREAM}", "{ledger}", "billing"]

[servers.mcp_tickets]
command = "{sys.executable}"
args = ["{UPSTREAM}", "{ledger}", "tickets"]
""",
        encoding="utf-8",
    )
    return path


def stdio_gateway(gateway_toml: Path, engine_key: str, **options) -> Client:
    """The gateway as an MCP client launches it: a subprocess speaking MCP on stdin/stdout."""
    return Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "hitl_client.mcp_gateway", "--config", str(gateway_toml)],
            env={**os.environ, "HITL_ENGINE_KEY": engine_key},
        ),
        **options,
    )


def text_of(result) -> str:
    return " ".join(block.text for block in result.content)


def test_it_lists_the_upstream_tools_unchanged_and_forwards_an_ungated_call_without_asking(
    gateway_toml, engine_key, ledger
):
    async def session():
        direct = {}
        for offers in ("billing", "tickets"):  # the two upstreams of gateway.toml, asked directly
            params = StdioServerParameters(command=sys.executable, args=[UPSTREAM, str(ledger), offers])
            async with Client(params) as upstream:
                direct.update({tool.name: tool for tool in (await upstream.list_tools()).tools})
        async with stdio_gateway(gateway_toml, engine_key) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            result = await client.call_tool("lookup_ticket", {"ticket_id": "T-4821"})
        return direct, listed, result

    direct, listed, result = asyncio.run(session())

    assert listed == direct  # names, descriptions and input schemas exactly as the upstreams offer them
    assert not result.is_error and "customer asks for a refund" in text_of(result)
    assert ledger.read_text().splitlines() == ["lookup_ticket T-4821"]
    assert not ApprovalRequest.objects.exists()


def _ledger_shows(ledger: Path, line: str, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while line not in ledger.read_text().splitlines():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_an_ungated_call_passes_on_the_upstreams_progress_tool_errors_and_the_clients_cancellation(
    gateway_toml, engine_key, ledger
):
    """Over stdio the gateway relays ungated calls as JSON-RPC, past its own MCP sessions: all the
    upstream says must still reach the client, and a cancellation must still reach the upstream."""
    progress = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def session():
        async with stdio_gateway(gateway_toml, engine_key) as client:
            exported = await client.call_tool("export_tickets", {"count": 3}, progress_callback=on_progress)
            refused = await client.call_tool("lookup_ticket", {"ticket_id": ["not", "a", "ticket id"]})
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(client.call_tool("wait_for_agent", {"seconds": 60}), timeout=2)
            # While the gateway still runs (its exit would end the call anyway): the upstream stopped waiting.
            cancelled = await asyncio.to_thread(_ledger_shows, ledger, "wait_for_agent cancelled")
            after = await client.call_tool("lookup_ticket", {"ticket_id": "T-7"})
        return exported, refused, cancelled, after

    exported, refused, cancelled, after = asyncio.run(session())

    assert not exported.is_error and text_of(exported) == "Exported 3 tickets."
    assert progress == [(1, 3, "ticket 1 of 3"), (2, 3, "ticket 2 of 3"), (3, 3, "ticket 3 of 3")]
    assert refused.is_error and "ticket_id" in text_of(refused)  # the upstream's own validation error
    assert cancelled
    assert not after.is_error and text_of(after).startswith("Ticket T-7")
    assert not ApprovalRequest.objects.exists()


def test_an_ungated_upstream_that_dies_mid_call_answers_a_tool_error(gateway_toml, engine_key, ledger):
    async def session():
        async with stdio_gateway(gateway_toml, engine_key) as client:
            crashed = await asyncio.wait_for(client.call_tool("crash", {}), timeout=20)
            again = await asyncio.wait_for(client.call_tool("lookup_ticket", {"ticket_id": "T-1"}), timeout=20)
            return crashed, again

    crashed, again = asyncio.run(session())

    assert crashed.is_error and text_of(crashed).startswith("mcp_tickets could not run crash")
    assert again.is_error and text_of(again).startswith("mcp_tickets could not run lookup_ticket")


def test_a_client_on_the_handshake_protocol_gets_the_same_answers(gateway_toml, engine_key, ledger):
    """A 2025-era client (initialize handshake) in front of upstreams the gateway reached on the 2026 protocol:
    the relay must not pass a request across protocol versions; the full path answers instead."""

    async def session():
        params = stdio_gateway(gateway_toml, engine_key).server
        async with Client(params, mode="legacy") as client:
            return await client.call_tool("lookup_ticket", {"ticket_id": "T-4821"})

    result = asyncio.run(session())

    assert not result.is_error and "customer asks for a refund" in text_of(result)
    assert ledger.read_text().splitlines() == ["lookup_ticket T-4821"]


def test_an_approved_call_to_a_gated_server_is_forwarded_and_its_outcome_reported(
    gateway_toml, engine_key, ledger, bob_api
):
    async def session():
        async with stdio_gateway(gateway_toml, engine_key) as client:
            return await client.call_tool("issue_refund", REFUND)

    reviewer = Reviewer(bob_api, "approve")
    result = asyncio.run(session())
    [decided] = reviewer.finish()

    assert not result.is_error and text_of(result) == "Refunded 4900 cents on T-4821."
    assert (decided["target"], decided["operation"], decided["caller"]) == (
        "mcp_billing",
        "issue_refund",
        "desktop-agent",
    )
    assert decided["arguments"] == REFUND  # the support config's level is full
    assert ledger.read_text().splitlines() == ["issue_refund T-4821 4900"]
    assert ApprovalRequest.objects.get(public_id=decided["id"]).execution_status == "executed"


def test_a_rejected_call_returns_a_tool_error_with_the_reviewers_reason(gateway_toml, engine_key, ledger, bob_api):
    async def session():
        async with stdio_gateway(gateway_toml, engine_key) as client:
            return await client.call_tool("issue_refund", REFUND)

    reviewer = Reviewer(bob_api, "reject", "Refunds over 40 USD need the finance lead.")
    result = asyncio.run(session())
    reviewer.finish()

    assert result.is_error and "Refunds over 40 USD need the finance lead" in text_of(result)
    assert ledger.read_text() == ""  # never reached the upstream


async def _in_process(config: GatewayConfig, call):
    """The gateway in this process (so the test's clock travel reaches the portal it shares it with)."""
    gateway = Gateway(config)
    async with AsyncExitStack() as stack:
        await gateway.connect(stack)
        async with Client(gateway.server) as client:
            return await call(client)


def test_an_expired_request_returns_a_tool_error_saying_nobody_answered(
    gateway_toml, engine_key, ledger, bob_api, monkeypatch
):
    monkeypatch.setenv("HITL_ENGINE_KEY", engine_key)

    def sweep_when_asked() -> None:
        wait_until_pending(bob_api)
        with travel(timedelta(hours=25)):
            expire_requests(ApprovalRequest.objects.all())

    import threading

    sweeper = threading.Thread(target=sweep_when_asked)
    sweeper.start()
    result = asyncio.run(
        _in_process(GatewayConfig.load(gateway_toml), lambda client: client.call_tool("issue_refund", REFUND))
    )
    sweeper.join()

    assert result.is_error and text_of(result).startswith("Nobody answered")
    assert ledger.read_text() == ""


def test_inert_forwards_the_call_and_logs_the_notice(gateway_toml, engine_key, ledger, acme, monkeypatch, caplog):
    monkeypatch.setenv("HITL_ENGINE_KEY", engine_key)
    workspace_set_plan(workspace=acme, plan="free")

    with caplog.at_level(logging.INFO, logger="hitl_client"):
        result = asyncio.run(
            _in_process(GatewayConfig.load(gateway_toml), lambda client: client.call_tool("issue_refund", REFUND))
        )

    assert not result.is_error and ledger.read_text().splitlines() == ["issue_refund T-4821 4900"]
    assert (
        "HITL: inert (Free plan or no enabled rules) — the call may proceed — forwarding mcp_billing.issue_refund"
        in (caplog.text)
    )
    assert not ApprovalRequest.objects.exists()


def test_a_restarted_gateway_waits_on_the_same_request_and_forwards_once(gateway_toml, engine_key, ledger, bob_api):
    async def give_up_mid_wait():
        async with stdio_gateway(gateway_toml, engine_key) as client:
            try:
                await asyncio.wait_for(client.call_tool("issue_refund", REFUND), timeout=3)
            except TimeoutError:
                pass  # the client goes away, and the gateway process with it

    asyncio.run(give_up_mid_wait())
    [asked] = wait_until_pending(bob_api)

    async def call_again():
        async with stdio_gateway(gateway_toml, engine_key) as client:
            return await client.call_tool("issue_refund", REFUND)

    reviewer = Reviewer(bob_api, "approve")
    result = asyncio.run(call_again())
    [decided] = reviewer.finish()

    assert decided["id"] == asked["id"] and ApprovalRequest.objects.count() == 1
    assert not result.is_error and ledger.read_text().splitlines() == ["issue_refund T-4821 4900"]


def test_an_identical_call_after_the_first_ran_asks_again(gateway_toml, engine_key, ledger, bob_api):
    async def session():
        async with stdio_gateway(gateway_toml, engine_key) as client:
            return [await client.call_tool("issue_refund", REFUND) for _ in range(2)]

    reviewer = Reviewer(bob_api, "approve", count=2)
    results = asyncio.run(session())
    decided = reviewer.finish()

    assert [result.is_error for result in results] == [False, False], [text_of(result) for result in results]
    assert len({approval["id"] for approval in decided}) == 2  # the second refund was a second question
    assert ledger.read_text().splitlines() == ["issue_refund T-4821 4900"] * 2


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _serving(command: list[str], port: int, env: dict | None = None) -> subprocess.Popen:
    process = subprocess.Popen(command, env=env or dict(os.environ), stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise AssertionError(f"{command[1:3]} never listened on {port}")


GATEWAY_TOKEN = "gw-token-0123456789abcdef0123456789abcdef"


def _http_toml(tmp_path, live_server, support, upstream_port: int) -> Path:
    toml = tmp_path / "http.toml"
    toml.write_text(
        f'[portal]\nurl = "{live_server.url}"\nconfig = "{support.public_id}"\n'
        f'[servers.mcp_billing]\nurl = "http://127.0.0.1:{upstream_port}/mcp"\n',
        encoding="utf-8",
    )
    return toml


def test_it_serves_streamable_http_in_front_of_an_upstream_url_to_clients_with_its_token(
    tmp_path, live_server, support, engine_key, ledger, bob_api
):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    upstream_port, gateway_port = _free_port(), _free_port()
    toml = _http_toml(tmp_path, live_server, support, upstream_port)
    upstream = _serving([sys.executable, UPSTREAM, str(ledger), "both", str(upstream_port)], upstream_port)
    gateway = _serving(
        [sys.executable, "-m", "hitl_client.mcp_gateway", "--config", str(toml), "--http", "--port", str(gateway_port)],
        gateway_port,
        env={**os.environ, "HITL_ENGINE_KEY": engine_key, "HITL_GATEWAY_TOKEN": GATEWAY_TOKEN},
    )
    url = f"http://127.0.0.1:{gateway_port}/mcp"
    try:
        initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
        refusals = [
            httpx2.post(url, json=initialize, headers=headers, timeout=10)
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": GATEWAY_TOKEN})
        ]

        async def session():
            headers = {"Authorization": f"Bearer {GATEWAY_TOKEN}"}
            async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    names = sorted(tool.name for tool in (await client.list_tools()).tools)
                    return names, await client.call_tool("issue_refund", REFUND)

        reviewer = Reviewer(bob_api, "approve")
        names, result = asyncio.run(session())
        [decided] = reviewer.finish()
    finally:
        for process in (gateway, upstream):
            process.terminate()
            process.wait(timeout=10)

    assert [refusal.status_code for refusal in refusals] == [401, 401, 401]
    assert refusals[0].headers["www-authenticate"].startswith("Bearer")
    assert names == ["issue_refund", "lookup_ticket"]
    assert decided["target"] == "mcp_billing" and not result.is_error
    assert ledger.read_text().splitlines() == ["issue_refund T-4821 4900"]  # the refused calls ran nothing


def test_http_mode_will_not_start_without_a_token(tmp_path, live_server, support, engine_key):
    toml = _http_toml(tmp_path, live_server, support, _free_port())
    env = {k: v for k, v in os.environ.items() if k != "HITL_GATEWAY_TOKEN"} | {"HITL_ENGINE_KEY": engine_key}

    ran = subprocess.run(
        [sys.executable, "-m", "hitl_client.mcp_gateway", "--config", str(toml), "--http", "--port", str(_free_port())],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert ran.returncode == 2
    assert "HITL_GATEWAY_TOKEN is not set" in ran.stderr


def test_the_log_counts_each_upstreams_own_tools(gateway_toml, engine_key, monkeypatch, caplog):
    monkeypatch.setenv("HITL_ENGINE_KEY", engine_key)
    gateway = Gateway(GatewayConfig.load(gateway_toml))

    async def start():
        async with AsyncExitStack() as stack:
            await gateway.connect(stack)

    with caplog.at_level(logging.INFO, logger="hitl_client.mcp_gateway"):
        asyncio.run(start())

    said = [record.getMessage() for record in caplog.records if "offers" in record.getMessage()]
    assert said == ["HITL gateway: mcp_billing offers 1 tools", "HITL gateway: mcp_tickets offers 4 tools"]


def test_a_config_without_the_engine_key_or_with_a_bad_server_id_says_what_to_fix(tmp_path, gateway_toml):
    with pytest.raises(GatewayConfigError, match="HITL_ENGINE_KEY is not set"):
        GatewayConfig.load(gateway_toml, environ={})
    bad = tmp_path / "bad.toml"
    bad.write_text('[portal]\nurl = "http://127.0.0.1:9"\nconfig = "cfg_x"\n[servers.billing]\ncommand = "x"\n')
    with pytest.raises(GatewayConfigError, match=r"\[servers.billing\]: a server id starts with mcp_"):
        GatewayConfig.load(bad, environ={"HITL_ENGINE_KEY": "hitl_x"})


def test_with_the_portal_unreachable_ungated_calls_go_on_and_gated_ones_fail_closed(
    gateway_toml, engine_key, ledger, monkeypatch
):
    monkeypatch.setenv("HITL_ENGINE_KEY", engine_key)

    async def outage(client):
        gateway.client.base_url = "http://127.0.0.1:9"  # the portal goes away after the gateway started
        gateway.client.retry_for = 0
        gateway._served_at = 0.0  # and the gate table is due for a refresh
        return [
            await client.call_tool("lookup_ticket", {"ticket_id": "T-4821"}),
            await client.call_tool("issue_refund", REFUND),
        ]

    gateway = Gateway(GatewayConfig.load(gateway_toml))

    async def session():
        async with AsyncExitStack() as stack:
            await gateway.connect(stack)
            async with Client(gateway.server) as client:
                return await outage(client)

    lookup, refund = asyncio.run(session())

    assert not lookup.is_error and ledger.read_text().splitlines() == ["lookup_ticket T-4821"]
    assert refund.is_error and "could not be asked, so the call was not run" in text_of(refund)


# --- elicitation: an upstream asks its user, a person answers in the portal ------------------------

ASKS = str(Path(__file__).with_name("upstream_asks.py"))
DETAILS = {"reason": "late", "amount_cents": 2500, "notify": True}


@pytest.fixture
def asks_toml(tmp_path, live_server, support, ledger) -> Path:
    """A gateway in front of mcp_desk, a server no rule gates, whose schedule_refund elicits its details."""
    path = tmp_path / "asks.toml"
    path.write_text(
        f'[portal]\nurl = "{live_server.url}"\nconfig = "{support.public_id}"\n'
        f'[gateway]\ncaller = "desktop-agent"\nwait_timeout_seconds = 20\n'
        f'[servers.mcp_desk]\ncommand = "{sys.executable}"\nargs = ["{ASKS}", "{ledger}"]\n',
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("tool", ["schedule_refund", "schedule_refund_classic"])
def test_an_upstreams_elicitation_is_a_portal_question_and_its_answer_the_accepted_content(
    asks_toml, engine_key, ledger, bob_api, tool
):
    # The newer way (Resolve(Elicit)) and the classic ctx.elicit() inside the tool: the same question.
    async def session():
        async with stdio_gateway(asks_toml, engine_key) as client:
            return await client.call_tool(tool, {"ticket_id": "T-4821"})

    reviewer = Reviewer(bob_api, "answer", body={"answers": DETAILS})
    result = asyncio.run(session())
    [decided] = reviewer.finish()

    assert not result.is_error and text_of(result) == "Scheduled a refund of 2500 cents on T-4821."
    assert ledger.read_text().splitlines() == [
        'accept {"amount_cents": 2500, "note": null, "notify": true, "reason": "late"}'  # an integer stays one
    ]
    assert decided["kind"] == "question" and decided["title"] == "Refund ticket T-4821: how much, and why?"
    asked = {question["id"]: question for question in decided["questions"]}
    assert asked["reason"]["type"] == "choice" and [o["value"] for o in asked["reason"]["options"]] == [
        "damaged",
        "late",
        "other",
    ]
    assert (asked["amount_cents"]["type"], asked["amount_cents"]["min"], asked["amount_cents"]["max"]) == (
        "number",
        1,
        10_000,
    )
    assert asked["notify"]["type"] == "boolean" and asked["note"]["required"] is False
    assert (decided["caller"], decided["thread_id"]) == ("desktop-agent", "mcp_desk")


def test_a_declined_question_is_a_declined_elicitation(asks_toml, engine_key, ledger, bob_api):
    async def session():
        async with stdio_gateway(asks_toml, engine_key, mode="legacy") as client:  # elicitation/create as a request
            return await client.call_tool("schedule_refund", {"ticket_id": "T-4821"})

    reviewer = Reviewer(bob_api, "decline", "Refunds go through finance.")
    result = asyncio.run(session())
    reviewer.finish()

    assert text_of(result) == "No refund scheduled on T-4821: decline."
    assert ledger.read_text().splitlines() == ["decline"]


def test_an_expired_question_cancels_the_elicitation_and_answers_nothing(
    asks_toml, engine_key, ledger, bob_api, monkeypatch
):
    monkeypatch.setenv("HITL_ENGINE_KEY", engine_key)

    def sweep_when_asked() -> None:
        wait_until_pending(bob_api)
        with travel(timedelta(hours=25)):
            expire_requests(ApprovalRequest.objects.all())

    import threading

    sweeper = threading.Thread(target=sweep_when_asked)
    sweeper.start()
    result = asyncio.run(
        _in_process(GatewayConfig.load(asks_toml), lambda client: client.call_tool("schedule_refund",
                                                                                   {"ticket_id": "T-4821"}))
    )  # fmt: skip
    sweeper.join()

    assert text_of(result) == "No refund scheduled on T-4821: cancel."
    assert ledger.read_text().splitlines() == ["cancel"]  # never the recommended option, never a decline


# --- URL mode: a waiting gated call points the client at the request's page ----------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_a_client_that_opens_urls_is_pointed_at_the_waiting_requests_page(
    mode, gateway_toml, engine_key, ledger, bob_api, live_server
):
    opened: list = []

    async def open_and_approve(context, params):
        opened.append(params)
        approval_id = params.url.rstrip("/").rsplit("/", 1)[-1]
        answer = await asyncio.to_thread(
            bob_api.post, f"/api/v1/approvals/{approval_id}/decision", {"decision": "approve"}
        )  # the person decides right there
        assert answer.status_code == 200, answer.text
        return types.ElicitResult(action="accept")

    async def session():
        params = stdio_gateway(gateway_toml, engine_key).server
        options = {} if mode == "auto" else {"mode": mode}
        async with Client(params, elicitation_callback=open_and_approve, **options) as client:
            return await client.call_tool("issue_refund", REFUND)

    result = asyncio.run(session())

    [pointed] = opened
    [stored] = ApprovalRequest.objects.all()
    assert pointed.mode == "url" and pointed.url == f"{live_server.url}/hitl/approvals/{stored.public_id}/"
    assert "issue_refund on mcp_billing waits for a person's approval" in pointed.message
    assert not result.is_error and ledger.read_text().splitlines() == ["issue_refund T-4821 4900"]
    assert stored.execution_status == "executed"


# --- approve with edits: the gateway forwards what was approved ----------------------------------


def test_an_edited_approval_forwards_the_edited_arguments_and_says_so(
    tmp_path, live_server, engine_key, ledger, acme, alice, bob_api
):
    billing = make_billing_config(acme, alice)
    toml = tmp_path / "billing.toml"
    toml.write_text(
        f'[portal]\nurl = "{live_server.url}"\nconfig = "{billing.public_id}"\n[gateway]\nwait_timeout_seconds = 20\n'
        f'[servers.mcp_billing]\ncommand = "{sys.executable}"\nargs = ["{UPSTREAM}", "{ledger}", "billing"]\n',
        encoding="utf-8",
    )

    async def session():
        async with stdio_gateway(toml, engine_key) as client:
            return await client.call_tool("issue_refund", REFUND)

    reviewer = Reviewer(bob_api, "approve", body={"arguments": {**REFUND, "amount_cents": 2500}})
    result = asyncio.run(session())
    [decided] = reviewer.finish()

    assert ledger.read_text().splitlines() == ["issue_refund T-4821 2500"]  # never the proposed 4900
    assert text_of(result).startswith("Refunded 2500 cents on T-4821.")
    assert "with edited arguments" in text_of(result)
    stored = ApprovalRequest.objects.get(public_id=decided["id"])
    assert stored.execution_status == "executed"


# --- run once: killed between the upstream's refund and its outcome report ---------------------


@pytest.fixture
def dying_toml(tmp_path, live_server, support, ledger):
    """gateway.toml whose billing upstream kills the gateway right after a refund."""
    path = tmp_path / "gateway.toml"
    path.write_text(
        f"""
[portal]
url = "{live_server.url}"
config = "{support.public_id}"

[gateway]
caller = "desktop-agent"
run_id = "desk-1"
wait_timeout_seconds = 20

[servers.mcp_billing]
command = "{sys.executable}"
args = ["{UPSTREAM}", "{ledger}", "billing-kills-gateway"]
""",
        encoding="utf-8",
    )
    return path


def test_a_gateway_killed_after_the_refund_never_refunds_again_when_restarted(dying_toml, engine_key, ledger, bob_api):
    async def killed():
        async with stdio_gateway(dying_toml, engine_key) as client:
            try:
                return await asyncio.wait_for(client.call_tool("issue_refund", REFUND), timeout=30)
            except Exception as error:  # the gateway died mid-call: no answer comes
                return error

    async def restarted():
        async with stdio_gateway(dying_toml, engine_key) as client:
            return await client.call_tool("issue_refund", REFUND)

    reviewer = Reviewer(bob_api, "approve")
    asyncio.run(killed())
    [decided] = reviewer.finish()
    assert ledger.read_text().splitlines() == ["issue_refund T-4821 4900"]

    result = asyncio.run(restarted())

    assert result.is_error and "nobody knows whether it ran" in text_of(result)
    assert ledger.read_text().splitlines() == ["issue_refund T-4821 4900"]  # once, not twice
    assert ApprovalRequest.objects.get(public_id=decided["id"]).execution_status == "started"
    assert ApprovalRequest.objects.count() == 1  # the restart asked nobody anew for the same call
