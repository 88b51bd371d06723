"""LangGraph adapter (`pip install "hitl-client[langgraph]"`): the portal answers a graph's `interrupt()`.

A node asks for review with Agent Inbox's request shape —

    response = interrupt([{"action_request": {"action": "delete_customer", "args": {...}},
                           "config": {"allow_accept": True, "allow_respond": True, ...},
                           "description": "..."}])[0]

— and the engine runs the graph through `HitlInbox.run` instead of `graph.invoke`:

    inbox = HitlInbox(client, served, caller="support-bot", kinds={"delete_customer": "delete"},
                      target=lambda action, args: f"customer {args['customer_id']}")
    result = inbox.run(graph, {"messages": [...]}, {"configurable": {"thread_id": "t-1"}})

Each interrupt becomes a portal request (the rule looked up in the served gate table), and the graph
resumes with `Command(resume=…)`: `{"type": "accept"}` when a person approved, `{"type": "response",
"args": <the reviewer's reason>}` when they rejected (`"ignore"` if the interrupt allows no response).
The idempotency key is (run, thread, interrupt id): with a checkpointer, an engine that restarts while
a person is still deciding finds the same paused interrupt and waits on the same request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

try:
    from langgraph.types import Command
except ImportError as missing:  # the core has no dependencies; each adapter needs its extra
    raise ImportError(f'{missing} — install the extra: pip install "hitl-client[langgraph]"') from missing

from ._async import AsyncHitlClient
from ._core import GatedCall, Verdict
from ._sync import HitlClient

logger = logging.getLogger("hitl_client")

Target = Callable[[str, dict], str]


class HitlInbox:
    """Answers a graph's Agent Inbox interrupts with the portal's decisions (sync or asyncio client)."""

    def __init__(
        self,
        client: HitlClient | AsyncHitlClient,
        served: dict,
        *,
        caller: str,
        kinds: Mapping[str, str] | None = None,
        default_kind: str = "worker",
        target: Target | None = None,
        run_id: str | None = None,
        wait_timeout: float | None = None,
    ):
        self.client = client
        self.served = served
        self.caller = caller
        self.kinds = dict(kinds or {})  # action name → rule kind (delete · mcp_server · cell · worker)
        self.default_kind = default_kind
        self.target = target or (lambda action, args: action)
        self.run_id = run_id
        self.wait_timeout = wait_timeout  # None: wait for a person as long as the request lives
        self.verdicts: list[Verdict] = []  # every decision this inbox applied, oldest first

    # --- the pure parts ---------------------------------------------------------------------

    def _calls(self, interrupt: Any, config: dict) -> list[tuple[GatedCall, dict]]:
        """The gated calls in one interrupt (Agent Inbox sends a list of requests, or one request)."""
        thread_id = str(config.get("configurable", {}).get("thread_id", ""))
        requests = interrupt.value if isinstance(interrupt.value, list) else [interrupt.value]
        calls = []
        for index, request in enumerate(requests):
            if not isinstance(request, dict) or "action_request" not in request:
                raise ValueError(
                    "HitlInbox answers interrupts in Agent Inbox's shape: {'action_request': {'action', 'args'}, "
                    f"'config': {{...}}, 'description'}}; got {request!r:.200}"
                )
            action = request["action_request"]["action"]
            args = request["action_request"].get("args") or {}
            call = GatedCall(
                kind=self.kinds.get(action, self.default_kind),
                target=self.target(action, args),
                operation=action,
                run_id=self.run_id or thread_id,
                thread_id=thread_id,
                call_id=f"{interrupt.id}:{index}" if len(requests) > 1 else interrupt.id,
                caller=self.caller,
                summary=request.get("description") or action,
                arguments=args,
            )
            calls.append((call, request.get("config") or {}))
        return calls

    @staticmethod
    def _response(verdict: Verdict, allowed: dict) -> dict:
        """Agent Inbox's HumanResponse for a verdict, within what the interrupt's config allows."""
        if verdict.allowed and allowed.get("allow_accept", True):
            return {"type": "accept", "args": None}
        if allowed.get("allow_respond", True):
            return {"type": "response", "args": verdict.message}
        if allowed.get("allow_ignore", False):
            return {"type": "ignore", "args": None}
        raise ValueError("The interrupt allows neither accept, respond nor ignore: the portal cannot answer it.")

    @staticmethod
    def _resume(interrupt: Any, responses: list[dict]) -> dict:
        return {interrupt.id: responses if isinstance(interrupt.value, list) else responses[0]}

    # --- sync --------------------------------------------------------------------------------

    def run(self, graph: Any, graph_input: Any, config: dict) -> Any:
        """Invoke (or, after a restart, pick up) the graph until it ends or a wait gives up.

        Returns the graph's last result; if a person has not answered within `wait_timeout`, the graph
        stays paused at its interrupt (see `graph.get_state(config).interrupts`) and the same call picks
        it up later.
        """
        assert isinstance(self.client, HitlClient), "HitlInbox.run needs a HitlClient; use arun with AsyncHitlClient"
        interrupts = graph.get_state(config).interrupts
        result = None if interrupts else graph.invoke(graph_input, config)
        while interrupts := graph.get_state(config).interrupts:
            resume: dict = {}
            approved: list[Verdict] = []
            for interrupt in interrupts:
                responses = []
                for call, allowed in self._calls(interrupt, config):
                    verdict = self.client.decide_call(self.served, call, wait_timeout=self.wait_timeout)
                    if verdict.state == "timeout":
                        return result  # still paused; nothing resumed, nothing run
                    self.verdicts.append(verdict)
                    approved += [verdict] if verdict.state == "approved" else []
                    responses.append(self._response(verdict, allowed))
                resume.update(self._resume(interrupt, responses))
            try:
                result = graph.invoke(Command(resume=resume), config)
            except Exception as error:
                for verdict in approved:
                    verdict.error = error
                    self.client.report(verdict)
                raise
            for verdict in approved:
                self.client.report(verdict)
        return result

    # --- asyncio -----------------------------------------------------------------------------

    async def arun(self, graph: Any, graph_input: Any, config: dict) -> Any:
        """`run` for asyncio: `graph.ainvoke` and an AsyncHitlClient."""
        assert isinstance(self.client, AsyncHitlClient), "HitlInbox.arun needs an AsyncHitlClient"
        interrupts = (await graph.aget_state(config)).interrupts
        result = None if interrupts else await graph.ainvoke(graph_input, config)
        while interrupts := (await graph.aget_state(config)).interrupts:
            resume: dict = {}
            approved: list[Verdict] = []
            for interrupt in interrupts:
                responses = []
                for call, allowed in self._calls(interrupt, config):
                    verdict = await self.client.decide_call(self.served, call, wait_timeout=self.wait_timeout)
                    if verdict.state == "timeout":
                        return result
                    self.verdicts.append(verdict)
                    approved += [verdict] if verdict.state == "approved" else []
                    responses.append(self._response(verdict, allowed))
                resume.update(self._resume(interrupt, responses))
            try:
                result = await graph.ainvoke(Command(resume=resume), config)
            except Exception as error:
                for verdict in approved:
                    verdict.error = error
                    await self.client.report(verdict)
                raise
            for verdict in approved:
                await self.client.report(verdict)
        return result
