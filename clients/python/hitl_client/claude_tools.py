"""Claude's tool calls as gated calls, and the portal's verdict as Claude's permission decision.

The table itself is data: tool_patterns.json (clients/conformance/tool_patterns.json, shipped in this package),
read by the Claude Code hook (`hitl-hook claude-code`), the Claude Agent SDK's `can_use_tool`
(claude_agent_sdk.py) and the TypeScript `canUseTool` adapter alike, and held to
clients/conformance/tool_cases.json by both clients' tests — so a rule means the same everywhere
(docs/api.md, "Coding agents"):

- `mcp__<server>__<tool>` → `mcp_server`, target `mcp_<server>`, operation the tool;
- `Task` (`Agent` in newer Claude Code) → `worker`, target the subagent type;
- `NotebookEdit` → `cell`, target the notebook, operation the edit mode;
- a `Bash` command, or what a `Write`/`Edit` puts in a file, matching a destructive pattern → `delete`,
  operation the pattern's name, target the one object it names (a path, table or resource) or, when
  it names several or several patterns match, the whole command — so a condition on the target never
  lets a second, unseen object through;
- anything else is not gated.

A map file (`--map FILE`, `ToolTable.extended`) adds tools and patterns:
`{"tools": {"WebFetch": {"kind": "worker", "target": "web", "operation": "fetch"}},
"patterns": [{"name": "helm uninstall", "regex": "\\\\bhelm\\\\s+uninstall\\\\s+(?<object>\\\\S+)"}]}`
— a pattern's regex may capture the object as `object` (`(?<object>…)`, or Python's `(?P<object>…)`);
`tools` (default `["Bash"]`) says whose text it reads; `ignore_case` defaults to false; `"replace": true`
drops the built-in patterns. Regexes match ASCII classes (`\\w`, `\\b`), as JavaScript's do.

Standard library only, and cheap to import: the hook imports it for every tool call.
"""

from __future__ import annotations

import json
import os
import re
from collections import namedtuple

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing is a good part of an ungated call's start
if TYPE_CHECKING:
    from typing import Any

CALLER = "claude-code"
KINDS = ("delete", "mcp_server", "cell", "worker")
TABLE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tool_patterns.json")
# `(?<name>` is JavaScript's (and the table's) named group; Python spells it `(?P<name>`.
_JS_GROUP = re.compile(r"\(\?<(?=[A-Za-z_])")


def _read_table() -> dict:
    with open(TABLE_FILE, encoding="utf-8") as handle:
        return json.load(handle)


_TABLE = _read_table()
TARGET_MAX: int = _TABLE["target_max"]


# Named tuples, not dataclasses: `dataclasses` imports `inspect`, a good part of an ungated call's start.
class Pattern(namedtuple("Pattern", "name regex tools")):
    """A destructive operation, found in a tool's text by a regex whose `object` group names what it destroys.

    `name` (str), `regex` (compiled), `tools` (the tools whose text it reads).
    """

    __slots__ = ()

    @classmethod
    def of(cls, name: str, regex: str, *, tools: tuple[str, ...] = ("Bash",), ignore_case: bool = False) -> Pattern:
        flags = re.ASCII | (re.IGNORECASE if ignore_case else 0)
        return cls(name, re.compile(_JS_GROUP.sub("(?P<", regex), flags), tuple(tools))

    @classmethod
    def from_spec(cls, spec: dict) -> Pattern:
        return cls.of(
            str(spec["name"]),
            str(spec["regex"]),
            tools=tuple(spec.get("tools") or ("Bash",)),
            ignore_case=bool(spec.get("ignore_case")),
        )


class ToolCall(namedtuple("ToolCall", "kind target operation")):
    """What the portal is asked about: a rule kind, its target and the operation (all str)."""

    __slots__ = ()


# The table's own (docs/api.md, "Coding agents": the contract's minimum); a map file adds to it.
PATTERNS: tuple[Pattern, ...] = tuple(Pattern.from_spec(spec) for spec in _TABLE["patterns"])
TOOLS: dict[str, dict] = _TABLE["tools"]
MCP: dict[str, str] = _TABLE["mcp"]
TEXTS: dict[str, str] = _TABLE["texts"]


class ToolTable:
    """Claude tool name (and input) → the gated call it is, or None when nothing gates it.

    `tools`: tool name → its spec as in the table (`kind`, `target`, `operation`: a fixed string or
    `{"input": field, "default": …}`), or a fixed ToolCall.
    """

    def __init__(self, tools: dict[str, Any] | None = None, patterns: tuple[Pattern, ...] = PATTERNS):
        self.tools = {**TOOLS, **(tools or {})}
        self.patterns = patterns

    def call_of(self, tool_name: str, tool_input: Any) -> ToolCall | None:
        tool_input = tool_input if isinstance(tool_input, dict) else {}
        if tool_name in self.tools:
            return _fixed_call(self.tools[tool_name], tool_name, tool_input)
        if tool_name.startswith(MCP["prefix"]):
            parts = tool_name[len(MCP["prefix"]) :].split(MCP["separator"], 1)
            if len(parts) == 2 and parts[0] and parts[1]:
                return ToolCall(MCP["kind"], _clip(MCP["target_prefix"] + parts[0]), _clip(parts[1]))
            return None
        return self.destructive(tool_name, tool_input)

    def destructive(self, tool_name: str, tool_input: dict) -> ToolCall | None:
        text = _text_of(tool_name, tool_input)
        if not text:
            return None
        found: list[tuple[int, Pattern, re.Match[str]]] = []
        for pattern in self.patterns:
            if tool_name in pattern.tools:
                found.extend((m.start(), pattern, m) for m in pattern.regex.finditer(text))
        if not found:
            return None
        found.sort(key=lambda item: item[0])
        _, pattern, match = found[0]
        objects = _objects(match) if len(found) == 1 else []
        # One object: a condition may judge it. Several, or several operations: only the whole text tells.
        target = objects[0] if len(objects) == 1 else (text.strip() if tool_name == "Bash" else "")
        if not target:
            target = _text(tool_input.get("file_path")) or text.strip()
        return ToolCall("delete", _clip(target), pattern.name)

    def extended(self, document: Any) -> ToolTable:
        """This table with a map file's tools and patterns added; ValueError says what is wrong in it."""
        if not isinstance(document, dict):
            raise ValueError("the map file must hold a JSON object with `tools` and/or `patterns`")
        unknown = set(document) - {"tools", "patterns", "replace"}
        if unknown:
            raise ValueError(
                f"the map file has unknown keys: {', '.join(sorted(unknown))} (expected tools, patterns, replace)"
            )
        tools = dict(self.tools)
        for name, spec in (document.get("tools") or {}).items():
            if not isinstance(spec, dict) or spec.get("kind") not in KINDS:
                raise ValueError(f"tools.{name}: needs `kind`, one of {', '.join(KINDS)}")
            tools[name] = spec
        patterns = [] if document.get("replace") is True else list(self.patterns)
        for index, spec in enumerate(document.get("patterns") or []):
            if not isinstance(spec, dict) or not spec.get("name") or not spec.get("regex"):
                raise ValueError(f"patterns[{index}]: needs `name` and `regex`")
            try:
                patterns.append(Pattern.from_spec(spec))
            except re.error as error:
                raise ValueError(f"patterns[{index}].regex: {error}") from None
        table = ToolTable(patterns=tuple(patterns))
        table.tools = tools
        return table


def load_table(path: str | None) -> ToolTable:
    """The built-in table, extended by the map file at `path` when there is one."""
    if not path:
        return ToolTable()
    try:
        with open(path, encoding="utf-8") as handle:
            document = json.load(handle)
    except (OSError, ValueError) as error:
        raise ValueError(f"the map file {path} could not be read: {error}") from None
    return ToolTable().extended(document)


def _fixed_call(spec: Any, tool_name: str, tool_input: dict) -> ToolCall:
    """A tool the table names: its kind, and its target and operation, fixed or read from the input."""
    if isinstance(spec, ToolCall):
        return spec
    return ToolCall(
        spec["kind"],
        _clip(_value(spec.get("target"), tool_name, tool_input)),
        _clip(_value(spec.get("operation"), tool_name, tool_input)),
    )


def _value(spec: Any, tool_name: str, tool_input: dict) -> str:
    if isinstance(spec, dict):
        return _text(tool_input.get(spec.get("input"))) or str(spec.get("default") or tool_name)
    return str(spec or tool_name)


def call_id_of(tool_name: str, tool_input: Any, tool_use_id: Any) -> str:
    """Claude's id of the tool use; without one, the call itself, so asking again finds the same request."""
    if isinstance(tool_use_id, str) and tool_use_id:
        return tool_use_id[:255]
    raw = json.dumps([tool_name, tool_input], sort_keys=True, default=str)
    import hashlib  # only for a hook input without a tool use id: not on every call's path

    return "call-" + hashlib.sha256(raw.encode()).hexdigest()[:32]


def summary_of(tool_name: str, tool_input: Any, cwd: Any = None) -> str:
    """What a reviewer reads first: the tool, where, and what it does."""
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    what = _text_of(tool_name, tool_input) or json.dumps(tool_input, ensure_ascii=False, default=str)
    purpose = _text(tool_input.get("description"))
    where = f" in {cwd}" if isinstance(cwd, str) and cwd else ""
    head = f"{tool_name}{where}: {what.strip()}"
    return (f"{head}\n({purpose})" if purpose else head)[:2000]


class Permission(namedtuple("Permission", "decision reason updated_input", defaults=("", None))):
    """Claude's side of a verdict: allow (with the reviewer's edit, if any), deny with the words to show, or
    nothing to say (the call is not gated: Claude's own permissions decide).

    `decision`: allow · deny · ask · none; `reason`: the words; `updated_input`: the edit, or None.
    """

    __slots__ = ()


def permission_of(verdict: Any, *, waited: float | None = None) -> Permission:
    """A verdict of the client (`allowed`, `state`, `message`, `arguments`, `edited`) as Claude's decision."""
    if verdict.state in ("not_gated", "inert", "allowed"):
        return Permission("none", verdict.message)
    approval = verdict.approval or {}
    if approval.get("status") == "allowed":  # the rule's condition let it through (or a shadow rule counted it)
        return Permission("none", approval.get("notice") or "The rule's condition lets this call through.")
    if verdict.allowed:
        if verdict.edited:
            if not isinstance(verdict.arguments, dict):
                return Permission("deny", "The reviewer's edit is not a tool input (a JSON object), so nothing ran.")
            return Permission("allow", verdict.message, verdict.arguments)
        return Permission("allow", verdict.message)
    if verdict.state == "timeout":
        within = f" within {waited:g} s" if waited is not None else ""
        return Permission(
            "deny",
            f"Nobody answered the approval request{within}, so the call was not run. It stays in the portal's "
            f"queue ({approval.get('id', '')}) until it expires: continue with your best assumption, say so, and "
            "ask again later only if it still blocks the work.",
        )
    return Permission("deny", verdict.message)


def _text_of(tool_name: str, tool_input: dict) -> str:
    """The text a destructive pattern is looked for in (the table's `texts`): the command, or what is written."""
    where = TEXTS.get(tool_name)
    if not where:
        return ""
    if "[]." in where:  # a list of items, each with the field: their texts, a line each
        items, field = where.split("[].", 1)
        listed = tool_input.get(items)
        if not isinstance(listed, list):
            return ""
        return "\n".join(_text(item.get(field)) for item in listed if isinstance(item, dict))
    return _text(tool_input.get(where))


def _objects(match: re.Match[str]) -> list[str]:
    if "object" not in match.re.groupindex or match.group("object") is None:
        return []
    return [word.strip("\"'`;") for word in match.group("object").split()]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _clip(value: str) -> str:
    return value[:TARGET_MAX]
