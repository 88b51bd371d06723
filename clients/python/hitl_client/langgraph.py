"""LangGraph adapter (`pip install "hitl-client[langgraph]"`): the portal answers a graph's `interrupt()`.

A node asks for review with Agent Inbox's request shape —

    response = interrupt([{"action_request": {"action": "delete_customer", "args": {...}},
                           "config": {"allow_accept": True, "allow_respond": True, ...},
                           "description": "..."}])[0]

— and the engine runs the graph through `HitlInbox.run` instead of `graph.invoke`:

    inbox = HitlInbox(client, served, caller="support-bot", kinds={"delete_customer": "delete"},
                      target=lambda action, args: f"customer {args['customer_id']}")
    result = inbox.run(graph, {"messages": [...]}, {"configurable": {"thread_id": "t-1"}})

Each request of an interrupt is mapped by what its `config` allows (Agent Inbox's HumanInterrupt):

- `allow_accept` / `allow_edit`: a gated call (the rule looked up in the served gate table). Approved →
  `{"type": "accept"}`; approved with the reviewer's edit (where the rule allows edits, checked against
  `schemas[action]`) → `{"type": "edit", "args": {"action", "args": <the edited arguments>}}` with the
  arguments as JSON values — numbers stay numbers, never stringified as Agent Inbox's own UI does;
  rejected or expired → `{"type": "response", "args": <the reviewer's reason, or "Nobody answered …">}`
  (`"ignore"` where no response is allowed). An edit the interrupt does not allow is not accepted as
  the original: the response says what was approved, so the node can ask again with it.
- only `allow_respond`: a question (one free-text question, the description as its prompt). Answered →
  `{"type": "response", "args": <their words>}`; declined or expired → `{"type": "ignore"}` where allowed,
  else a response saying which — a decline and an expiry in different words.
- only `allow_ignore`: nothing to ask; `{"type": "ignore"}`.

The idempotency key is (run, thread, interrupt id): with a checkpointer, an engine that restarts while
a person is still deciding finds the same paused interrupt and waits on the same request.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

try:
    from langgraph.types import Command
except ImportError as missing:  # the core has no dependencies; each adapter needs its extra
    raise ImportError(f'{missing} — install the extra: pip install "hitl-client[langgraph]"') from missing

from . import _core
from ._async import AsyncHitlClient
from ._core import GatedCall, Verdict, edit_to_retry
from ._questions import Answers
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
        schemas: Mapping[str, dict] | None = None,
        run_id: str | None = None,
        wait_timeout: float | None = None,
        requested_by: str | None = None,
    ):
        self.client = client
        self.served = served
        self.caller = caller
        self.requested_by = requested_by  # the person the run acts for: four eyes keeps them from approving
        self.kinds = dict(kinds or {})  # action name → rule kind (delete · mcp_server · cell · worker)
        self.default_kind = default_kind
        self.target = target or (lambda action, args: action)
        self.schemas = dict(schemas or {})  # action name → JSON Schema of its args (checks a reviewer's edit)
        self.run_id = run_id
        self.wait_timeout = wait_timeout  # None: wait for a person as long as the request lives
        self.verdicts: list[Verdict] = []  # every decision this inbox applied to a gated call, oldest first
        self.answers: list[Answers] = []  # every answer to a question it asked, oldest first

    # --- the pure parts ---------------------------------------------------------------------

    def _requests(self, interrupt: Any, config: dict) -> list[_Request]:
        """The requests in one interrupt (Agent Inbox sends a list of requests, or one request)."""
        thread_id = str(config.get("configurable", {}).get("thread_id", ""))
        requests = interrupt.value if isinstance(interrupt.value, list) else [interrupt.value]
        found = []
        for index, request in enumerate(requests):
            if not isinstance(request, dict) or "action_request" not in request:
                raise ValueError(
                    "HitlInbox answers interrupts in Agent Inbox's shape: {'action_request': {'action', 'args'}, "
                    f"'config': {{...}}, 'description'}}; got {request!r:.200}"
                )
            action = request["action_request"]["action"]
            args = request["action_request"].get("args") or {}
            allowed = request.get("config") or {}
            gated = allowed.get("allow_accept", True) or allowed.get("allow_edit", False)
            call = GatedCall(
                kind=self.kinds.get(action, self.default_kind),
                target=self.target(action, args) if gated else action,  # a question proposes no call
                operation=action,
                run_id=self.run_id or thread_id,
                thread_id=thread_id,
                call_id=f"{interrupt.id}:{index}" if len(requests) > 1 else interrupt.id,
                caller=self.caller,
                summary=request.get("description") or action,
                arguments=args,
                arguments_schema=self.schemas.get(action),
                requested_by=self.requested_by,
            )
            found.append(_Request(call, allowed, request.get("description") or ""))
        return found

    @staticmethod
    def _response(verdict: Verdict, allowed: dict, action: str) -> dict:
        """Agent Inbox's HumanResponse for a gated call's verdict, within what the interrupt's config allows."""
        if verdict.allowed:
            if verdict.edited or not allowed.get("allow_accept", True):  # an edit-only interrupt: its own args
                return {"type": "edit", "args": {"action": action, "args": verdict.arguments}}
            return {"type": "accept", "args": None}
        if allowed.get("allow_respond", True):
            return {"type": "response", "args": verdict.message}
        if allowed.get("allow_ignore", False):
            return {"type": "ignore", "args": None}
        raise ValueError("The interrupt allows neither accept, respond nor ignore: the portal cannot answer it.")

    @staticmethod
    def _answered(answers: Answers, allowed: dict) -> dict:
        """Agent Inbox's HumanResponse for a question's answers: their words, or ignore / a response saying why not."""
        if answers.answered:
            return {"type": "response", "args": answers.get("response") or ""}
        if allowed.get("allow_ignore", False) and not (answers.halted and allowed.get("allow_respond", True)):
            return {"type": "ignore", "args": None}
        return {"type": "response", "args": answers.message}

    def _verdict_within(self, verdict: Verdict, allowed: dict) -> Verdict:
        """An edit the interrupt cannot take back is not accepted as the original call."""
        if verdict.allowed and verdict.edited and not allowed.get("allow_edit", False):
            return edit_to_retry(verdict)
        return verdict

    def _question(self, request: _Request) -> dict:
        prompt = request.description or request.call.operation
        return {"id": "response", "prompt": prompt[:2000], "type": "text"}

    @staticmethod
    def _resume(interrupt: Any, responses: list[dict]) -> dict:
        return {interrupt.id: responses if isinstance(interrupt.value, list) else responses[0]}

    # --- sync --------------------------------------------------------------------------------

    def _decide(self, request: _Request) -> tuple[dict | None, Verdict | None]:
        """One request's HumanResponse (None: still waiting), and the verdict to report once the graph ran."""
        assert isinstance(self.client, HitlClient)
        call, allowed = request.call, request.allowed
        if allowed.get("allow_accept", True) or allowed.get("allow_edit", False):
            verdict = self._verdict_within(
                self.client.decide_call(self.served, call, wait_timeout=self.wait_timeout), allowed
            )
            verdict = self.client.start(verdict)  # run once: a call started before a restart is in doubt
            if verdict.state == "timeout":
                return None, None
            self.verdicts.append(verdict)
            return self._response(verdict, allowed, call.operation), verdict
        if allowed.get("allow_respond", True):
            answers = self.client.ask(
                self.served, [self._question(request)], title=call.operation, run_id=call.run_id,
                thread_id=call.thread_id, call_id=call.call_id, caller=call.caller, wait_timeout=self.wait_timeout,
            )  # fmt: skip
            if answers.state == "timeout":
                return None, None
            self.answers.append(answers)
            return self._answered(answers, allowed), None
        return {"type": "ignore", "args": None}, None

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
            decided: list[Verdict] = []
            for interrupt in interrupts:
                responses = []
                for request in self._requests(interrupt, config):
                    response, verdict = self._decide(request)
                    if response is None:
                        return result  # still paused; nothing resumed, nothing run
                    decided += [verdict] if verdict is not None and _core.reportable(verdict) else []
                    responses.append(response)
                resume.update(self._resume(interrupt, responses))
            try:
                result = graph.invoke(Command(resume=resume), config)
            except Exception as error:
                for verdict in decided:
                    verdict.error = error
                    self.client.report(verdict)
                raise
            for verdict in decided:
                self.client.report(verdict)
        return result

    # --- asyncio -----------------------------------------------------------------------------

    async def _adecide(self, request: _Request) -> tuple[dict | None, Verdict | None]:
        assert isinstance(self.client, AsyncHitlClient)
        call, allowed = request.call, request.allowed
        if allowed.get("allow_accept", True) or allowed.get("allow_edit", False):
            verdict = self._verdict_within(
                await self.client.decide_call(self.served, call, wait_timeout=self.wait_timeout), allowed
            )
            verdict = await self.client.start(verdict)  # run once: a call started before a restart is in doubt
            if verdict.state == "timeout":
                return None, None
            self.verdicts.append(verdict)
            return self._response(verdict, allowed, call.operation), verdict
        if allowed.get("allow_respond", True):
            answers = await self.client.ask(
                self.served, [self._question(request)], title=call.operation, run_id=call.run_id,
                thread_id=call.thread_id, call_id=call.call_id, caller=call.caller, wait_timeout=self.wait_timeout,
            )  # fmt: skip
            if answers.state == "timeout":
                return None, None
            self.answers.append(answers)
            return self._answered(answers, allowed), None
        return {"type": "ignore", "args": None}, None

    async def arun(self, graph: Any, graph_input: Any, config: dict) -> Any:
        """`run` for asyncio: `graph.ainvoke` and an AsyncHitlClient."""
        assert isinstance(self.client, AsyncHitlClient), "HitlInbox.arun needs an AsyncHitlClient"
        interrupts = (await graph.aget_state(config)).interrupts
        result = None if interrupts else await graph.ainvoke(graph_input, config)
        while interrupts := (await graph.aget_state(config)).interrupts:
            resume: dict = {}
            decided: list[Verdict] = []
            for interrupt in interrupts:
                responses = []
                for request in self._requests(interrupt, config):
                    response, verdict = await self._adecide(request)
                    if response is None:
                        return result
                    decided += [verdict] if verdict is not None and _core.reportable(verdict) else []
                    responses.append(response)
                resume.update(self._resume(interrupt, responses))
            try:
                result = await graph.ainvoke(Command(resume=resume), config)
            except Exception as error:
                for verdict in decided:
                    verdict.error = error
                    await self.client.report(verdict)
                raise
            for verdict in decided:
                await self.client.report(verdict)
        return result


@dataclass(frozen=True)
class _Request:
    """One Agent Inbox request: the call it proposes, what its config allows, its description."""

    call: GatedCall
    allowed: dict
    description: str
