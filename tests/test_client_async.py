"""AsyncHitlClient against the live portal, and both clients reconnecting through a connection that drops."""

import asyncio
import socket
import threading

import pytest
from hitl_client import AsyncHitlClient, GatedCall, HitlClient, HitlError

from approvals.models import ApprovalRequest

from .approvals.engine_support import make_support_config
from .helpers import make_token

REFUND = GatedCall(
    kind="mcp_server",
    target="mcp_billing",
    operation="issue_refund",
    run_id="run_7",
    thread_id="thr_1",
    call_id="call_2",
    caller="support-bot",
    summary="Refund 49.00 USD",
    arguments={"ticket_id": "T-4821", "amount_cents": 4900},
)


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


@pytest.fixture
def engine_key(acme) -> str:
    return make_token(acme, engine="support-engine")


def _decide_when_pending(bob_api, decision: str, reason: str = "") -> threading.Thread:
    """A reviewer at the queue: decides the first pending request through the reviewer API."""

    def reviewer() -> None:
        for _ in range(200):
            pending = bob_api.get("/api/v1/approvals?status=pending").json()["results"]
            if pending:
                bob_api.post(f"/api/v1/approvals/{pending[0]['id']}/decision", {"decision": decision, "reason": reason})
                return
            threading.Event().wait(0.05)

    thread = threading.Thread(target=reviewer)
    thread.start()
    return thread


def test_the_async_client_runs_an_approved_call_and_reports_it(live_server, engine_key, support, bob_api):
    ran = []

    async def refund() -> str:
        ran.append("issue_refund")
        return "exec_async"

    async def turn():
        client = AsyncHitlClient(live_server.url, engine_key)
        served = await client.served(support.public_id)
        return await client.gate_call(served, REFUND, execute=refund, wait_timeout=20)

    reviewer = _decide_when_pending(bob_api, "approve")
    verdict = asyncio.run(turn())
    reviewer.join()

    assert verdict.state == "approved" and ran == ["issue_refund"]
    stored = ApprovalRequest.objects.get(public_id=verdict.approval["id"])
    assert (stored.execution_status, stored.execution_id) == ("executed", "exec_async")


def test_the_async_client_halts_a_rejected_call_with_the_reviewers_reason(live_server, engine_key, support, bob_api):
    async def turn():
        client = AsyncHitlClient(live_server.url, engine_key)
        served = await client.served(support.public_id)
        return await client.gate_call(served, REFUND, execute=lambda: pytest.fail("ran"), wait_timeout=20)

    reviewer = _decide_when_pending(bob_api, "reject", "Refunds wait for Monday.")
    verdict = asyncio.run(turn())
    reviewer.join()

    assert not verdict.allowed and verdict.state == "rejected"
    assert verdict.reason == "Refunds wait for Monday." and "Refunds wait for Monday" in verdict.message


def test_the_async_client_raises_the_portals_error_with_its_code(live_server, engine_key):
    with pytest.raises(HitlError) as raised:
        asyncio.run(AsyncHitlClient(live_server.url, engine_key).served("cfg_doesnotexist00"))

    assert (raised.value.status, raised.value.code) == (404, "not_found")


class DroppingProxy:
    """A TCP proxy on 127.0.0.1 that hangs up on the first `drops` long-polls, then forwards — a flaky network."""

    def __init__(self, upstream_url: str, drops: int):
        host, port = upstream_url.removeprefix("http://").rstrip("/").split(":")
        self.upstream = (host, int(port))
        self.drops = drops
        self.dropped = 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                downstream, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(downstream,), daemon=True).start()

    def _handle(self, downstream: socket.socket) -> None:
        head = downstream.recv(65536)
        if b"wait=" in head.split(b"\r\n", 1)[0] and self.dropped < self.drops:
            self.dropped += 1
            self._refuse(downstream)
            return
        upstream = socket.create_connection(self.upstream)
        upstream.sendall(head)

        def pipe(source: socket.socket, sink: socket.socket) -> None:
            try:
                while chunk := source.recv(65536):
                    sink.sendall(chunk)
            except OSError:
                pass
            finally:
                sink.close()

        threading.Thread(target=pipe, args=(downstream, upstream), daemon=True).start()
        pipe(upstream, downstream)

    def _refuse(self, downstream: socket.socket) -> None:
        downstream.close()  # the connection dies mid-wait

    def close(self) -> None:
        self.server.close()


def test_both_clients_reconnect_when_the_connection_drops_mid_wait(live_server, engine_key, support, bob_api):
    proxy = DroppingProxy(live_server.url, drops=2)
    try:
        reviewer = _decide_when_pending(bob_api, "approve")
        sync_verdict = HitlClient(proxy.url, engine_key).gate_call(
            HitlClient(proxy.url, engine_key).served(support.public_id), REFUND, wait_timeout=20
        )
        reviewer.join()
        assert proxy.dropped == 2 and sync_verdict.state == "approved"

        proxy.dropped = 0
        other = GatedCall(**{**REFUND.__dict__, "call_id": "call_3"})

        async def turn():
            client = AsyncHitlClient(proxy.url, engine_key)
            return await client.gate_call(await client.served(support.public_id), other, wait_timeout=20)

        reviewer = _decide_when_pending(bob_api, "approve")
        async_verdict = asyncio.run(turn())
        reviewer.join()
        assert proxy.dropped == 2 and async_verdict.state == "approved"
    finally:
        proxy.close()


class RestartingProxy(DroppingProxy):
    """A proxy whose node is restarting: the first long-poll answered 502, the next 503 (nginx's HTML page)."""

    def _refuse(self, downstream: socket.socket) -> None:
        status = "502 Bad Gateway" if self.dropped % 2 else "503 Service Temporarily Unavailable"
        page = b"<html><body><h1>Bad Gateway</h1></body></html>"
        head = (
            f"HTTP/1.1 {status}\r\nContent-Type: text/html\r\nContent-Length: {len(page)}\r\nConnection: close\r\n\r\n"
        )
        downstream.sendall(head.encode() + page)
        downstream.close()


def test_both_clients_ask_again_when_a_proxy_answers_502_then_503_mid_wait(live_server, engine_key, support, bob_api):
    """A node restarting behind nginx: the wait is asked again, logged as a reconnect, never raised."""
    proxy = RestartingProxy(live_server.url, drops=2)
    try:
        reviewer = _decide_when_pending(bob_api, "approve")
        client = HitlClient(proxy.url, engine_key)
        sync_verdict = client.gate_call(client.served(support.public_id), REFUND, wait_timeout=20)
        reviewer.join()
        assert proxy.dropped == 2 and sync_verdict.state == "approved"

        proxy.dropped = 0
        other = GatedCall(**{**REFUND.__dict__, "call_id": "call_4"})

        async def turn():
            client = AsyncHitlClient(proxy.url, engine_key)
            return await client.gate_call(await client.served(support.public_id), other, wait_timeout=20)

        reviewer = _decide_when_pending(bob_api, "approve")
        async_verdict = asyncio.run(turn())
        reviewer.join()
        assert proxy.dropped == 2 and async_verdict.state == "approved"
    finally:
        proxy.close()
