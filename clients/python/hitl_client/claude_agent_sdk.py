"""Claude Agent SDK adapter (`pip install "hitl-client[claude-agent-sdk]"`): people answer the permission asks.

    client = AsyncHitlClient(portal_url, engine_key)
    permissions = HitlPermissions(client, await client.served("cfg_…"), run_id="deploy-42")
    async for message in query(prompt=…, options=ClaudeAgentOptions(can_use_tool=permissions)):
        …

The SDK calls `can_use_tool` for each tool call its permission rules do not settle. Here the call is
mapped by the same tool table as the `hitl-hook` Claude Code hook (claude_tools.py: MCP tools →
`mcp_server`, Task → `worker`, NotebookEdit → `cell`, destructive shell and SQL → `delete`); when
the served table gates it, the portal is asked, and the answer is the SDK's own:
`PermissionResultAllow` (with `updated_input` when the reviewer edited the call) or
`PermissionResultDeny` with the reviewer's words, or "nobody answered". A call nothing gates is
allowed — or handed to `otherwise`, your own `can_use_tool`, when you pass one. A portal that cannot
be asked denies, naming the problem (fails closed).

Claude's clarifying questions (the `AskUserQuestion` tool) are asked through the portal as questions
(choice, multi-select where Claude says so, words of one's own allowed) and answered the SDK's way:
`updated_input` carries the questions and `answers` (question → the chosen label, several joined by
", "). A decline or an expiry is a deny saying which.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

try:
    from claude_agent_sdk import PermissionResultAllow, PermissionResultDeny
except ImportError as missing:  # the core has no dependencies; each adapter needs its extra
    raise ImportError(f'{missing} — install the extra: pip install "hitl-client[claude-agent-sdk]"') from missing

from . import claude_tools
from ._async import AsyncHitlClient
from ._core import GatedCall, HitlError

CALLER = "claude-agent-sdk"
ASK_TOOL = "AskUserQuestion"
PermissionResult = PermissionResultAllow | PermissionResultDeny
CanUseTool = Callable[[str, dict, Any], Awaitable[PermissionResult]]


class HitlPermissions:
    """A `can_use_tool` callback: the portal's rules decide which calls a person approves."""

    def __init__(
        self,
        client: AsyncHitlClient,
        served: dict,
        *,
        run_id: str | None = None,
        caller: str = CALLER,
        table: claude_tools.ToolTable | None = None,
        wait_timeout: float | None = None,
        otherwise: CanUseTool | None = None,
    ):
        self.client = client
        self.served = served
        self.run_id = run_id or f"claude-agent-{uuid.uuid4()}"
        self.caller = caller
        self.table = table or claude_tools.ToolTable()
        self.wait_timeout = wait_timeout
        self.otherwise = otherwise

    async def __call__(self, tool_name: str, tool_input: dict, context: Any) -> PermissionResult:
        try:
            if tool_name == ASK_TOOL:
                return await self.ask(tool_input, context)
            return await self.gate(tool_name, tool_input, context)
        except HitlError as error:
            return PermissionResultDeny(
                message=f"The HITL Portal could not be asked about {tool_name} ({error}), so it was not run."
            )

    async def gate(self, tool_name: str, tool_input: dict, context: Any) -> PermissionResult:
        mapped = self.table.call_of(tool_name, tool_input)
        if mapped is None:
            return await self.not_gated(tool_name, tool_input, context)
        call = GatedCall(
            kind=mapped.kind,
            target=mapped.target,
            operation=mapped.operation,
            run_id=self.run_id,
            thread_id=self.thread_of(context),
            call_id=claude_tools.call_id_of(tool_name, tool_input, getattr(context, "tool_use_id", None)),
            caller=self.caller,
            summary=claude_tools.summary_of(tool_name, tool_input),
            arguments=tool_input,
        )
        verdict = await self.client.decide_call(
            self.served, call, wait_timeout=self.wait_timeout, on_pending=lambda _: self.client.jwks()
        )
        permission = claude_tools.permission_of(verdict, waited=self.wait_timeout)
        if permission.decision == "none":
            return await self.not_gated(tool_name, tool_input, context)
        if permission.decision == "allow":
            return PermissionResultAllow(updated_input=permission.updated_input)
        return PermissionResultDeny(message=permission.reason)

    async def ask(self, tool_input: dict, context: Any) -> PermissionResult:
        """Claude's clarifying questions, asked of people through the portal."""
        asked = [q for q in tool_input.get("questions") or [] if isinstance(q, dict) and q.get("question")]
        if not asked:
            return PermissionResultDeny(message="AskUserQuestion carried no question to ask.")
        answers = await self.client.ask(
            self.served,
            [question_of(index, q) for index, q in enumerate(asked)],
            run_id=self.run_id,
            thread_id=self.thread_of(context),
            call_id=claude_tools.call_id_of(ASK_TOOL, tool_input, getattr(context, "tool_use_id", None)),
            caller=self.caller,
            title=" · ".join(str(q.get("header") or "") for q in asked if q.get("header"))[:200] or None,
            wait_timeout=self.wait_timeout,
        )
        if not answers.answered:
            return PermissionResultDeny(message=answers.message)
        chosen = {q["question"]: label_of(answers.get(f"q{index + 1}")) for index, q in enumerate(asked)}
        return PermissionResultAllow(updated_input={**tool_input, "answers": chosen})

    async def not_gated(self, tool_name: str, tool_input: dict, context: Any) -> PermissionResult:
        if self.otherwise is not None:
            return await self.otherwise(tool_name, tool_input, context)
        return PermissionResultAllow()

    def thread_of(self, context: Any) -> str:
        """A subagent's calls are its own thread of the run."""
        return str(getattr(context, "agent_id", None) or self.run_id)[:500]


def question_of(index: int, question: dict) -> dict:
    """One AskUserQuestion question as a portal question (docs/api.md, "Questions and plans")."""
    options = [o for o in question.get("options") or [] if isinstance(o, dict) and o.get("label")]
    asked: dict[str, Any] = {"id": f"q{index + 1}", "prompt": str(question["question"])[:2000]}
    if len(options) < 2:  # the portal's choice takes 2–20 options; fewer is an open question
        return {**asked, "type": "text"}
    return {
        **asked,
        "type": "choice",
        "options": [option_of(o) for o in options[:20]],
        "multi": bool(question.get("multiSelect")),
        "free_text": True,
    }


def option_of(option: dict) -> dict:
    label = str(option["label"])
    described = {"description": str(option["description"])} if option.get("description") else {}
    return {"value": label, "label": label, **described}


def label_of(value: Any) -> str:
    """An answer as AskUserQuestion takes it: the label, or several joined by ", "."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return "" if value is None else str(value)
