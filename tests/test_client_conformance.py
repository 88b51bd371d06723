"""The conformance table, the Python client's side: each case's world on the server as deployed, the client's
gate_call / ask / review_plan driven through it, and what it ran and told the agent held to the case's `expect`.

The portal answers the same cases in tests/approvals/test_conformance.py; clients/conformance/README.md.
"""

import asyncio
import threading

import pytest
from hitl_client import AsyncHitlClient, HitlClient, find_gate

from approvals.models import ApprovalRequest

from .conformance import DEFAULTS, act, before, call_of, cases, wait_timeout, world
from .helpers import make_token

CLIENTS = ["sync", "asyncio"]


def check(expect: dict, *, state: str, message: str, allowed: bool | None = None) -> None:
    assert state == expect["state"], message
    if "allowed" in expect and allowed is not None:
        assert allowed is expect["allowed"], message
    assert expect["message"] in message
    if "message_not" in expect:
        assert expect["message_not"] not in message


class Engine:
    """Runs one client call in a thread, as an engine blocks on it; `asked` is set once it pends or returns."""

    def __init__(self, kind: str, base_url: str, key: str):
        self.sync = HitlClient(base_url, key)
        self.kind = kind
        self.base_url, self.key = base_url, key
        self.asked = threading.Event()
        self.pending: dict | None = None
        self.result = None
        self.error: BaseException | None = None

    def on_pending(self, approval: dict) -> None:
        self.pending = approval
        self.asked.set()

    def start(self, method: str, *args, **kwargs) -> None:
        def run() -> None:
            try:
                if self.kind == "sync":
                    self.result = getattr(self.sync, method)(*args, on_pending=self.on_pending, **kwargs)
                else:
                    client = AsyncHitlClient(self.base_url, self.key)
                    call = getattr(client, method)(*args, on_pending=self.on_pending, **kwargs)
                    self.result = asyncio.run(call)
            except BaseException as error:  # surfaced by finish()
                self.error = error
            finally:
                self.asked.set()

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()
        assert self.asked.wait(timeout=30), "the engine never asked"

    def finish(self):
        self.thread.join(timeout=40)
        assert not self.thread.is_alive()
        if self.error is not None:
            raise self.error
        return self.result


@pytest.fixture
def engine_key(acme) -> str:
    return make_token(acme, engine="conformance-engine")


@pytest.mark.parametrize("kind", CLIENTS)
@pytest.mark.parametrize("case", cases())
def test_the_client_does_and_says_what_the_table_says(
    case, kind, live_server, acme, alice, bob, engine_key, alice_api, bob_api
):
    config = world(case, acme, alice)
    engine = Engine(kind, live_server.url, engine_key)
    served = engine.sync.served(config.public_id)
    before(case, admin_api=alice_api, reviewer_api=bob_api, client=engine.sync, served=served)
    expect = case["expect"]
    ran: list = []
    run = {key: DEFAULTS["run"][key] for key in ("run_id", "thread_id", "call_id", "caller")}

    if "call" in case:
        call = call_of(case)
        gate = find_gate(served, kind=call.kind, target=call.target, operation=call.operation, point=call.point)
        assert (gate is not None) is expect["gated"]
        engine.start("gate_call", served, call, execute=ran.append, wait_timeout=wait_timeout(case))
    elif "ask" in case:
        engine.start("ask", served, case["ask"]["questions"], title=case["ask"]["title"], wait_timeout=20, **run)
    else:
        engine.start("review_plan", served, case["plan"]["plan"], title=case["plan"]["title"], wait_timeout=20, **run)
    if engine.pending is not None:
        for step in case["steps"]:
            act(step, engine.pending["id"], reviewer_api=bob_api)
    result = engine.finish()

    check(expect, state=result.state, message=result.message, allowed=getattr(result, "allowed", None))
    assert bool(ran) is expect["runs"]
    if expect["runs"] and "call" in case:
        assert ran == [expect.get("arguments", case["call"]["arguments"])]
        assert result.edited is expect.get("edited", False)
    if "outcome" in expect:
        stored = ApprovalRequest.objects.get(public_id=result.approval["id"])
        assert stored.execution_status == expect["outcome"]
    if expect["state"] == "in_doubt":  # the earlier engine's `started` stands: nothing ran, nothing overwrote it
        assert ApprovalRequest.objects.get().execution_status == "started"
