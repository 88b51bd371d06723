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

import pytest
from hitl_client.mcp_gateway import Gateway, GatewayConfig, GatewayConfigError
from mcp import Client, StdioServerParameters

from approvals.models import ApprovalRequest
from approvals.services import expire_requests
from workspaces.services import workspace_set_plan

from ..approvals.engine_support import make_support_config
from ..helpers import make_token, travel
from .support import Reviewer, wait_until_pending

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


def stdio_gateway(gateway_toml: Path, engine_key: str) -> Client:
    """The gateway as an MCP client launches it: a subprocess speaking MCP on stdin/stdout."""
    return Client(
        StdioServerParameters(
            command=sys.executable,
            args=["-m", "hitl_client.mcp_gateway", "--config", str(gateway_toml)],
            env={**os.environ, "HITL_ENGINE_KEY": engine_key},
        )
    )


def text_of(result) -> str:
    return " ".join(block.text for block in result.content)


def test_it_lists_the_upstream_tools_unchanged_and_forwards_an_ungated_call_without_asking(
    gateway_toml, engine_key, ledger
):
    async def session():
        async with Client(StdioServerParameters(command=sys.executable, args=[UPSTREAM, str(ledger)])) as upstream:
            direct = {tool.name: tool for tool in (await upstream.list_tools()).tools}
        async with stdio_gateway(gateway_toml, engine_key) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            result = await client.call_tool("lookup_ticket", {"ticket_id": "T-4821"})
        return direct, listed, result

    direct, listed, result = asyncio.run(session())

    assert listed == direct  # names, descriptions and input schemas exactly as the upstreams offer them
    assert not result.is_error and "customer asks for a refund" in text_of(result)
    assert ledger.read_text().splitlines() == ["lookup_ticket T-4821"]
    assert not ApprovalRequest.objects.exists()


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

    assert [result.is_error for result in results] == [False, False]
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


def test_it_serves_streamable_http_in_front_of_an_upstream_url(
    tmp_path, live_server, support, engine_key, ledger, bob_api
):
    upstream_port, gateway_port = _free_port(), _free_port()
    toml = tmp_path / "http.toml"
    toml.write_text(
        f'[portal]\nurl = "{live_server.url}"\nconfig = "{support.public_id}"\n'
        f'[servers.mcp_billing]\nurl = "http://127.0.0.1:{upstream_port}/mcp"\n',
        encoding="utf-8",
    )
    upstream = _serving([sys.executable, UPSTREAM, str(ledger), "both", str(upstream_port)], upstream_port)
    gateway = _serving(
        [sys.executable, "-m", "hitl_client.mcp_gateway", "--config", str(toml), "--http", "--port", str(gateway_port)],
        gateway_port,
        env={**os.environ, "HITL_ENGINE_KEY": engine_key},
    )
    try:

        async def session():
            async with Client(f"http://127.0.0.1:{gateway_port}/mcp") as client:
                names = sorted(tool.name for tool in (await client.list_tools()).tools)
                return names, await client.call_tool("issue_refund", REFUND)

        reviewer = Reviewer(bob_api, "approve")
        names, result = asyncio.run(session())
        [decided] = reviewer.finish()
    finally:
        for process in (gateway, upstream):
            process.terminate()
            process.wait(timeout=10)

    assert names == ["issue_refund", "lookup_ticket"]
    assert decided["target"] == "mcp_billing" and not result.is_error
    assert ledger.read_text().splitlines() == ["issue_refund T-4821 4900"]


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
