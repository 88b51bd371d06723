"""OpenAI Agents SDK adapter (`pip install "hitl-client[openai-agents]"`): a person answers the run's approvals.

Mark tools that need approval the SDK's way (`@function_tool(needs_approval=True)`), gate MCP servers
as the portal's rules say (`require_approval=gates.mcp_server("mcp_billing")`), and run the agent
through `HitlRunner.run` instead of `Runner.run`:

    gates = HitlRunner(client, served, caller="support-bot", kinds={"delete_customer": "delete"})
    billing = MCPServerStdio(params, name="mcp_billing", require_approval=gates.mcp_server("mcp_billing"))
    result = await gates.run(agent, "Refund ticket T-4821", run_id="conv-42")

Each approval interruption becomes a portal request (the rule looked up in the served gate table:
`mcp_server` by server id for MCP tools, the `kinds` mapping for function tools); the runner waits
for the person, approves or rejects the item in the run state — the rejection message is what the
reviewer wrote — and resumes the run. If a wait gives up (`wait_timeout`), the result still holds its
interruptions: save `result.to_state().to_string()`, and after a restart `run(agent, state)` waits on
the same requests (the idempotency key is run id, agent name and the model's call id).

Approved with edits: the SDK's `RunState.approve` runs the call exactly as the model made it and takes no
other arguments, so the runner rejects that call with a message saying exactly what was approved
("… Make the call again with exactly these arguments: {…}"). When the model then makes that call, it
runs on the same approval — no second request — and its outcome carries the approved digest.

`gates.ask_human()` is a tool the model calls to ask people one to eight questions (choice, text,
number, yes/no) through the portal; the tool's output is their answers, or that they declined, or that
nobody answered before the deadline — in different words.
"""

from __future__ import annotations

import contextvars
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

try:
    from agents import Agent, FunctionTool, Runner, RunState
    from agents.items import ToolApprovalItem, ToolCallOutputItem
    from agents.tool_context import ToolContext
except ImportError as missing:  # the core has no dependencies; each adapter needs its extra
    raise ImportError(f'{missing} — install the extra: pip install "hitl-client[openai-agents]"') from missing

from . import _core
from ._async import AsyncHitlClient
from ._core import GatedCall, HitlError, Verdict, would_gate

logger = logging.getLogger("hitl_client")

Target = Callable[[str, Any], str]


class HitlRunner:
    """Runs an agent, answering its approval interruptions with the portal's decisions."""

    def __init__(
        self,
        client: AsyncHitlClient,
        served: dict,
        *,
        caller: str,
        kinds: Mapping[str, str] | None = None,
        default_kind: str = "worker",
        target: Target | None = None,
        mcp_ids: Mapping[str, str] | None = None,
        wait_timeout: float | None = None,
        requested_by: str | None = None,
    ):
        self.client = client
        self.served = served
        self.caller = caller
        self.requested_by = requested_by  # the person the run acts for: four eyes keeps them from approving
        self.kinds = dict(kinds or {})  # function tool name → rule kind
        self.default_kind = default_kind
        self.target = target or (lambda tool, args: tool)
        self.mcp_ids = dict(mcp_ids or {})  # an MCP server's name in the agent → its mcp_… id, when they differ
        self.wait_timeout = wait_timeout
        self.verdicts: list[Verdict] = []
        # Approvals with edits the SDK could not run as edited, by the approved digest: the model's call
        # with exactly those arguments runs on them.
        self.edits: dict[str, Verdict] = {}
        self._run_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("hitl_run_id", default=None)

    def mcp_server(self, server_id: str) -> bool:
        """`require_approval` for an MCP server: True when a served rule gates it (active, or inert — then the
        run logs the notice and proceeds), so a server no rule names runs without interruptions."""
        return would_gate(self.served, kind="mcp_server", target=server_id, operation="")

    def call_for(self, item: ToolApprovalItem, *, run_id: str, thread_id: str) -> GatedCall:
        raw = item.raw_item
        get = raw.get if isinstance(raw, dict) else lambda name, default=None: getattr(raw, name, default)
        tool = item.tool_name or get("name") or "tool"
        raw_arguments = get("arguments")
        try:
            arguments = json.loads(raw_arguments) if isinstance(raw_arguments, str) else raw_arguments
        except ValueError:
            arguments = raw_arguments
        origin = item.tool_origin
        if origin is not None and origin.mcp_server_name:
            server = self.mcp_ids.get(origin.mcp_server_name, origin.mcp_server_name)
            kind, target = "mcp_server", server
        else:
            kind, target = self.kinds.get(tool, self.default_kind), self.target(tool, arguments)
        return GatedCall(
            kind=kind,
            target=target,
            operation=tool,
            run_id=run_id,
            thread_id=thread_id,
            call_id=str(get("call_id") or get("id")),
            caller=self.caller,
            # Never the arguments: at level summary they must not reach the portal, not even inside the summary.
            summary=f"{tool} on {target}" if target != tool else tool,
            arguments=arguments,
            requested_by=self.requested_by,
        )

    async def run(self, agent: Agent[Any], input: Any, *, run_id: str, **runner_options: Any) -> Any:
        """`Runner.run` until the run ends, or a wait for a person gives up (then: result with interruptions).

        `input` may be a RunState restored after a restart: its pending interruptions are answered
        first, from the same requests.
        """
        token = self._run_id.set(run_id)  # what ask_human registers its questions under
        try:
            return await self._run(agent, input, run_id=run_id, **runner_options)
        finally:
            self._run_id.reset(token)

    async def _run(self, agent: Agent[Any], input: Any, *, run_id: str, **runner_options: Any) -> Any:
        pending = input.get_interruptions() if isinstance(input, RunState) else []
        if pending:
            state, interruptions, result = input, pending, None
        else:
            result = await Runner.run(agent, input, **runner_options)
            state, interruptions = None, result.interruptions
        while interruptions:
            state = state or result.to_state()
            approved: list[tuple[Verdict, str]] = []
            for item in interruptions:
                call = self.call_for(item, run_id=run_id, thread_id=agent.name)
                held = self.edits.pop(_core.running_digest(self.served, call, call.arguments), None)
                if held is not None:  # the call the reviewer's edit asked for: it runs on that approval
                    held = await self.client.start(held)
                    if held.allowed:
                        state.approve(item)
                        approved.append((held, call.call_id))
                    else:
                        state.reject(item, rejection_message=held.message)
                    continue
                verdict = await self.client.decide_call(self.served, call, wait_timeout=self.wait_timeout)
                if verdict.state == "timeout":
                    return result if result is not None else state  # still paused; nothing ran
                if verdict.allowed and verdict.edited:
                    # RunState.approve takes no arguments: reject the call as proposed, say what was approved.
                    self.edits[verdict.call_digest or ""] = verdict
                    verdict = _core.edit_to_retry(verdict)
                # Run once: `started` before the SDK runs it; a call started before a restart is in doubt.
                verdict = await self.client.start(verdict)
                self.verdicts.append(verdict)
                if verdict.allowed:
                    state.approve(item)
                    if verdict.state == "approved":
                        approved.append((verdict, call.call_id))
                else:
                    state.reject(item, rejection_message=verdict.message)
            result = await Runner.run(agent, state, **runner_options)
            await self._report(result, approved)
            state, interruptions = None, result.interruptions
        await self._unused_edits()
        return result

    def run_sync(self, agent: Agent[Any], input: Any, *, run_id: str, **runner_options: Any) -> Any:
        import asyncio

        return asyncio.run(self.run(agent, input, run_id=run_id, **runner_options))

    async def _report(self, result: Any, approved: list[tuple[Verdict, str]]) -> None:
        """The outcome of each approved call: executed when the run holds its output, failed when it does not."""
        outputs = {
            _call_id(item.raw_item): item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)
        }
        for verdict, call_id in approved:
            if call_id in outputs:
                verdict.result = call_id
            else:
                verdict.error = RuntimeError("the run resumed without the tool's output")
            await self.client.report(verdict)

    async def _unused_edits(self) -> None:
        """The run ended without the call an edit asked for: those approvals ran nothing, and say so."""
        while self.edits:
            _, verdict = self.edits.popitem()
            try:
                await self.client.report(_core.edit_to_retry(verdict))
            except HitlError as error:  # the run is over; a lost outcome must not lose its result
                approval_id = (verdict.approval or {}).get("id")
                logger.warning("HITL: could not report the outcome of %s: %s", approval_id, error)

    # --- ask_human ---------------------------------------------------------------------------

    def ask_human(self, *, name: str = "ask_human", ttl_seconds: int | None = None) -> FunctionTool:
        """A tool the model calls to ask people questions through the portal; its output is their answers.

        Registered under the run id `run` was given, the agent's name and the model's call id, so a
        retried call waits on the same question. The output tells an answer, a decline (their words)
        and an expiry (nobody answered; nothing was chosen for them) apart.
        """

        async def invoke(context: ToolContext[Any], raw: str) -> str:
            try:
                asked = json.loads(raw or "{}")
                questions = [_question(q) for q in asked.get("questions") or []]
            except (ValueError, TypeError, AttributeError) as error:
                return f"The questions could not be read ({error}); nothing was asked."
            agent = getattr(context, "agent", None)
            try:
                answers = await self.client.ask(
                    self.served, questions, title=str(asked.get("title") or "") or None,
                    run_id=self._run_id.get() or "openai-agents", thread_id=getattr(agent, "name", None) or name,
                    call_id=context.tool_call_id, caller=self.caller, ttl_seconds=ttl_seconds,
                    wait_timeout=self.wait_timeout,
                )  # fmt: skip
            except ValueError as error:
                return f"Nothing was asked: {error}"
            except HitlError as error:
                return f"The approval portal could not be asked, so nobody saw the questions: {error}"
            return answers.message

        return FunctionTool(
            name=name,
            description=(
                "Ask people (not the user in this chat) one to eight questions when you need a decision or "
                "a fact only a person has. Waits for their answers. Prefer a choice with options where you "
                "can; `recommended` is the index of the option you would pick. If nobody answers, go on "
                "with your best assumption and say so."
            ),
            params_json_schema=ASK_HUMAN_SCHEMA,
            on_invoke_tool=invoke,
            strict_json_schema=True,
        )


ASK_HUMAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string", "description": "What you are asking about, in a few words."},
        "questions": {
            "type": "array",
            "minItems": 1,
            "maxItems": 8,
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "A short unique id, e.g. env"},
                    "prompt": {"type": "string"},
                    "type": {"type": "string", "enum": ["choice", "text", "number", "boolean"]},
                    "options": {
                        "type": ["array", "null"],
                        "items": {"type": "string"},
                        "description": "For a choice: 2 to 20 options. Otherwise null (or []).",
                    },
                    "multi": {
                        "type": ["boolean", "null"],
                        "description": "For a choice: may they pick several? Otherwise null.",
                    },
                    "recommended": {
                        "type": ["integer", "null"],
                        "description": "For a choice: an option's index. Otherwise null.",
                    },
                },
                "required": ["id", "prompt", "type", "options", "multi", "recommended"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["title", "questions"],
    "additionalProperties": False,
}


def _question(asked: dict) -> dict:
    """The model's question (strict schema: every field present, null when unused) in the contract's shape.

    Models often fill what does not apply with an empty value (`"options": []`, `"multi": false` on a number
    question); the portal refuses choice fields on another type, so they are dropped here rather than sent."""
    question: dict[str, Any] = {"id": str(asked["id"]), "prompt": str(asked["prompt"]), "type": asked["type"]}
    if asked["type"] != "choice":
        return question
    if asked.get("options") is not None:
        question["options"] = [{"value": str(option)} for option in asked["options"]]
    for key in ("multi", "recommended"):
        if asked.get(key) is not None:
            question[key] = asked[key]
    return question


def _call_id(raw: Any) -> str | None:
    return raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
