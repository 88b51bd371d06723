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
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

try:
    from agents import Agent, Runner, RunState
    from agents.items import ToolApprovalItem, ToolCallOutputItem
except ImportError as missing:  # the core has no dependencies; each adapter needs its extra
    raise ImportError(f'{missing} — install the extra: pip install "hitl-client[openai-agents]"') from missing

from ._async import AsyncHitlClient
from ._core import GatedCall, Verdict, would_gate

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
    ):
        self.client = client
        self.served = served
        self.caller = caller
        self.kinds = dict(kinds or {})  # function tool name → rule kind
        self.default_kind = default_kind
        self.target = target or (lambda tool, args: tool)
        self.mcp_ids = dict(mcp_ids or {})  # an MCP server's name in the agent → its mcp_… id, when they differ
        self.wait_timeout = wait_timeout
        self.verdicts: list[Verdict] = []

    def mcp_server(self, server_id: str) -> bool:
        """`require_approval` for an MCP server: True when a served rule gates it (active, or inert — then the
        run logs the notice and proceeds), so a server no rule names runs without interruptions."""
        return would_gate(self.served, kind="mcp_server", target=server_id)

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
        )

    async def run(self, agent: Agent[Any], input: Any, *, run_id: str, **runner_options: Any) -> Any:
        """`Runner.run` until the run ends, or a wait for a person gives up (then: result with interruptions).

        `input` may be a RunState restored after a restart: its pending interruptions are answered
        first, from the same requests.
        """
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
                verdict = await self.client.decide_call(self.served, call, wait_timeout=self.wait_timeout)
                if verdict.state == "timeout":
                    return result if result is not None else state  # still paused; nothing ran
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


def _call_id(raw: Any) -> str | None:
    return raw.get("call_id") if isinstance(raw, dict) else getattr(raw, "call_id", None)
