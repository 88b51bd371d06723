"""`hitl-hook claude-code`: a Claude Code `PreToolUse` hook that asks the portal before a gated tool runs.

    {"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "timeout": 630,
        "command": "hitl-hook claude-code --config cfg_…"}]}]}}

Claude Code runs the command for each tool call with the hook's JSON on stdin. The call is mapped to
a gated call (claude_tools.py); a call nothing gates — not in the tool table, or not gated by the
served table, or HITL inert — gets no answer at all (Claude Code's own permissions decide) and as
fast as a process can start. A gated call is registered, waited for, its receipt checked, and
answered with exactly one JSON object on stdout (docs/api.md, "Coding agents"): allow, allow with
the reviewer's edit as `updatedInput`, or deny with the reviewer's words. Whatever goes wrong — input
that is not a hook's JSON, a map file that does not parse, a portal that cannot be reached, answers
5xx or times out — is answered too: deny naming the problem, or `ask` (Claude Code's own prompt)
with `--on-error ask`. Never a traceback on stdout, always exit 0.

Only the standard library and claude_tools.py are imported until a call is gated: the hook is a new
process per tool call, and the full client (asyncio, PyJWT, cryptography) costs more to import than
an ungated call may take. So the served table is read here with one plain GET; everything after it
— register, wait, receipt, verdict — is the client's own (HitlClient.decide_call).
"""

from __future__ import annotations

import json
import os
import sys

from . import claude_tools

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing is a good part of an ungated call's start
if TYPE_CHECKING:
    from typing import Any

DEFAULT_WAIT = 600.0
DEFAULT_TIMEOUT = 10.0  # per HTTP call before the wait: a portal slower than this counts as down


class Problem(Exception):
    """Something that keeps the hook from asking the portal; its message is what Claude Code shows."""


USAGE = (
    "usage: hitl-hook claude-code --config CFG [--wait SECONDS] [--on-error deny|ask] [--map FILE] "
    "[--timeout SECONDS]\n\nA Claude Code PreToolUse command hook: Claude Code's hook JSON on stdin, its decision "
    "on stdout.\nHITL_URL and HITL_ENGINE_KEY name the portal and the engine key (docs/coding-agents.md)."
)


class Options:
    """The command line: `hitl-hook claude-code --config CFG …` (USAGE)."""

    def __init__(self) -> None:
        self.config = ""
        self.wait = DEFAULT_WAIT
        self.on_error = "deny"
        self.map: str | None = None
        self.timeout = DEFAULT_TIMEOUT


def parse(argv: list[str]) -> Options:
    """The options, or a Problem naming the bad one. Not argparse: with the help formatter it needs, it costs
    an ungated call as much as the rest of its start."""
    if not argv or argv[0] != "claude-code":
        raise Problem("hitl-hook was started with bad arguments: the first one names the agent, claude-code")
    options, rest = Options(), list(argv[1:])
    while rest:
        flag, given, value = rest.pop(0).partition("=")
        if flag not in ("--config", "--wait", "--on-error", "--map", "--timeout"):
            raise Problem(f"hitl-hook was started with bad arguments: unknown option {flag!r}")
        if not given:
            if not rest:
                raise Problem(f"hitl-hook was started with bad arguments: {flag} needs a value")
            value = rest.pop(0)
        if flag in ("--wait", "--timeout"):
            try:
                seconds = float(value)
            except ValueError:
                seconds = -1.0
            if not seconds >= 0:
                raise Problem(f"hitl-hook was started with bad arguments: {flag} takes seconds, not {value!r}")
            setattr(options, flag[2:], seconds)
        elif flag == "--on-error" and value not in ("deny", "ask"):
            raise Problem(f"hitl-hook was started with bad arguments: --on-error is deny or ask, not {value!r}")
        else:
            setattr(options, flag[2:].replace("-", "_"), value)
    if not options.config:
        raise Problem("hitl-hook was started with bad arguments: --config CFG is required (the config's id)")
    return options


def answer(decision: str, reason: str, updated_input: dict | None = None) -> dict:
    """Claude Code's PreToolUse decision, as its hook reference spells it."""
    output: dict[str, Any] = {
        "hookEventName": "PreToolUse",
        "permissionDecision": decision,
        "permissionDecisionReason": reason,
    }
    if updated_input is not None:
        output["updatedInput"] = updated_input
    return {"hookSpecificOutput": output}


def read_hook_input(raw: str) -> dict:
    try:
        payload = json.loads(raw)
    except ValueError as error:
        raise Problem(f"hitl-hook could not read Claude Code's hook input: it is not JSON ({error})") from None
    if not isinstance(payload, dict):
        raise Problem("hitl-hook could not read Claude Code's hook input: it is not a JSON object")
    event = payload.get("hook_event_name", "PreToolUse")
    if event != "PreToolUse":
        raise Problem(
            f"hitl-hook claude-code answers PreToolUse hooks only, not {event!r}: check .claude/settings.json"
        )
    if not isinstance(payload.get("tool_name"), str) or not payload["tool_name"]:
        raise Problem("hitl-hook could not read Claude Code's hook input: it names no tool (`tool_name`)")
    if not isinstance(payload.get("tool_input", {}), dict):
        raise Problem("hitl-hook could not read Claude Code's hook input: `tool_input` is not an object")
    return payload


def portal() -> tuple[str, str]:
    url, key = os.environ.get("HITL_URL", "").strip(), os.environ.get("HITL_ENGINE_KEY", "").strip()
    if not url:
        raise Problem("hitl-hook cannot ask the HITL Portal: HITL_URL is not set")
    if not key:
        raise Problem("hitl-hook cannot ask the HITL Portal: HITL_ENGINE_KEY is not set")
    return url.rstrip("/"), key


def served_table(url: str, key: str, config_id: str, *, timeout: float) -> dict:
    """The served gate table (GET …/served), in one try: a hook that cannot read it says so at once.

    One HTTP/1.1 exchange on a socket (`ssl` only for https): urllib brings http.client, email and ssl,
    which cost an ungated call more than the rest of its start together.
    """
    import socket
    from urllib.parse import quote, urlsplit

    parts = urlsplit(url)
    secure = parts.scheme == "https"
    path = f"{parts.path.rstrip('/')}/api/v1/configs/{quote(config_id)}/served"
    head = f"GET {path} HTTP/1.1\r\nHost: {parts.netloc}\r\nAuthorization: Bearer {key}\r\n"
    head += "Accept: application/json\r\nConnection: close\r\n\r\n"
    try:
        with socket.create_connection((parts.hostname or "", parts.port or (443 if secure else 80)), timeout) as sock:
            if secure:
                import ssl

                sock = ssl.create_default_context().wrap_socket(sock, server_hostname=parts.hostname)
            sock.sendall(head.encode("latin-1"))
            raw = _read_answer(sock)
    except OSError as error:
        raise Problem(f"the HITL Portal at {url} could not be reached: {error.strerror or error}") from None
    status, headers, body = _response(raw)
    if status != 200:
        raise Problem(f"the HITL Portal at {url} answered {status} for config {config_id}: {_said(body)}")
    try:
        return json.loads(body)
    except ValueError:
        raise Problem(f"the HITL Portal at {url} answered something that is not JSON for the served table") from None


def _read_answer(sock: Any) -> bytes:
    """The whole answer: to its Content-Length where it gives one (a proxy may keep the connection), else
    to the end of the connection."""
    raw = b""
    while chunk := sock.recv(65536):
        raw += chunk
        head, found, body = raw.partition(b"\r\n\r\n")
        if found:
            for line in head.split(b"\r\n")[1:]:
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length" and len(body) >= int(value.strip() or b"0"):
                    return raw
    return raw


def _response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of an HTTP/1.1 answer read to the end (Connection: close)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        return 0, {}, b""
    headers = {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunked(body)
    return status, headers, body


def _unchunked(body: bytes) -> bytes:
    chunks = []
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line.split(b";")[0] or b"0", 16)
        if size == 0:
            break
        chunks.append(body[:size])
        body = body[size + 2 :]
    return b"".join(chunks)


def decide(args: Options, payload: dict) -> dict | None:
    """The answer for one hook call, or None when nothing gates it."""
    table = claude_tools.load_table(args.map) if args.map else claude_tools.ToolTable()
    tool_name, tool_input = payload["tool_name"], payload.get("tool_input") or {}
    mapped = table.call_of(tool_name, tool_input)
    if mapped is None:
        return None
    url, key = portal()
    served = served_table(url, key, args.config, timeout=args.timeout)
    from ._core import find_gate

    if find_gate(served, kind=mapped.kind, target=mapped.target) is None:
        return None  # not gated, or HITL inert: Claude Code's own permissions decide
    return asked(args, payload, served, mapped, url, key)


def asked(args: Options, payload: dict, served: dict, mapped: claude_tools.ToolCall, url: str, key: str):
    """Register the gated call, wait for a person, and turn the verified verdict into Claude Code's answer."""
    from ._core import GatedCall, HitlError
    from ._sync import HitlClient

    tool_name, tool_input = payload["tool_name"], payload.get("tool_input") or {}
    session = str(payload.get("session_id") or "claude-code")[:500]
    call = GatedCall(
        kind=mapped.kind,
        target=mapped.target,
        operation=mapped.operation,
        run_id=session,
        thread_id=session,
        call_id=claude_tools.call_id_of(tool_name, tool_input, payload.get("tool_use_id")),
        caller=claude_tools.CALLER,
        summary=claude_tools.summary_of(tool_name, tool_input, payload.get("cwd")),
        arguments=tool_input,
    )
    client = HitlClient(url, key, timeout=max(args.timeout, 35.0), retry_for=args.timeout)
    try:
        # While a person decides, fetch the receipt keys: after their click only the verification is left.
        verdict = client.decide_call(served, call, wait_timeout=args.wait, on_pending=lambda _: client.jwks())
    except HitlError as error:
        raise Problem(f"the HITL Portal at {url} could not be asked about {tool_name}: {error}") from None
    permission = claude_tools.permission_of(verdict, waited=args.wait)
    if permission.decision == "none":
        return None
    return answer(permission.decision, permission.reason, permission.updated_input)


def main(argv: list[str] | None = None) -> int:
    """The console script: one JSON answer (or none) on stdout, exit 0, whatever happens."""
    stdout, sys.stdout = sys.stdout, sys.stderr  # nothing but the answer may reach Claude Code's stdout
    argv = sys.argv[1:] if argv is None else argv
    if "-h" in argv or "--help" in argv:
        stdout.write(USAGE + "\n")
        sys.stdout = stdout
        return 0
    on_error = "ask" if _on_error_flag(argv) == "ask" else "deny"
    try:
        args = parse(argv)
        on_error = args.on_error
        result = decide(args, read_hook_input(sys.stdin.read()))
    except Problem as problem:
        result = answer(on_error, _for_claude(str(problem), on_error))
    except ValueError as error:  # a map file that does not parse
        result = answer(on_error, _for_claude(f"hitl-hook: {error}", on_error))
    except Exception as error:  # never a traceback where Claude Code reads the answer
        result = answer(on_error, _for_claude(f"hitl-hook failed: {type(error).__name__}: {error}", on_error))
    finally:
        sys.stdout = stdout
    if result is not None:
        stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
        stdout.flush()
    return 0


def _for_claude(problem: str, on_error: str) -> str:
    if on_error == "ask":
        return f"{problem}. Nobody was asked through the HITL Portal: decide yourself."
    return f"{problem}. The call was not run (the hook fails closed); fix that, or pass --on-error ask."


def _on_error_flag(argv: list[str]) -> str:
    """`--on-error`'s value read before the rest parses, so bad arguments are answered as the user asked."""
    for index, arg in enumerate(argv):
        if arg == "--on-error" and index + 1 < len(argv):
            return argv[index + 1]
        if arg.startswith("--on-error="):
            return arg.split("=", 1)[1]
    return "deny"


def _said(body: bytes) -> str:
    """The portal's error message (docs/api.md's envelope), or what the answer was."""
    try:
        detail = json.loads(body or b"{}").get("error", {})
        return str(detail.get("message") or "no message")
    except (ValueError, AttributeError):
        return "an answer that is not the portal's JSON"


def run() -> None:
    """The `hitl-hook` console script: main(), then out at once.

    Claude Code waits for the process to end, and an interpreter that has loaded the client (PyJWT,
    cryptography) takes longer to tear itself down than the rest of the answer after the click: the
    answer is written and flushed, nothing else is left to do, so the process ends without the teardown.
    """
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run()
