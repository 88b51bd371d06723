"""Claude Code's side of `hitl-hook`: the installed console script run as Claude Code runs a command hook."""

import json
import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ..helpers import make_config, make_rule, publish

HOOK = str(Path(sys.executable).with_name("hitl-hook"))
SESSION = "3f1c9a52-7d0e-4c4b-9a43-5f1e2d7c8b90"


def hook_input(tool_name: str, tool_input: dict, *, tool_use_id: str = "toolu_01HkX9", **more) -> dict:
    """The JSON Claude Code writes on a PreToolUse hook's stdin (its hooks reference's fields)."""
    return {
        "session_id": SESSION,
        "transcript_path": f"/home/dev/.claude/projects/shop/{SESSION}.jsonl",
        "cwd": "/home/dev/shop",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool_name,
        "tool_input": tool_input,
        "tool_use_id": tool_use_id,
        **more,
    }


def run_hook(
    stdin: dict | str, *args: str, url: str = "", key: str = "", timeout: float = 60
) -> subprocess.CompletedProcess:
    """`hitl-hook claude-code …` with `stdin`, as Claude Code starts it; CompletedProcess with text output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    env.update(HITL_URL=url, HITL_ENGINE_KEY=key)
    raw = stdin if isinstance(stdin, str) else json.dumps(stdin)
    return subprocess.run(
        [HOOK, "claude-code", *args], input=raw, capture_output=True, text=True, env=env, timeout=timeout
    )


def start_hook(stdin: dict, *args: str, url: str, key: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HITL_")}
    env.update(HITL_URL=url, HITL_ENGINE_KEY=key)
    process = subprocess.Popen(
        [HOOK, "claude-code", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    process.stdin.write(json.dumps(stdin))
    process.stdin.close()
    return process


def finish(process: subprocess.Popen, timeout: float = 30) -> subprocess.CompletedProcess:
    """The started hook's exit, with what it wrote (its answer is one short line: no pipe fills up)."""
    process.wait(timeout=timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, process.stdout.read(), process.stderr.read())


def decision_of(done: subprocess.CompletedProcess) -> dict:
    """The one JSON object on stdout (exit 0, nothing else there), as Claude Code reads it."""
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    answer = json.loads(line)
    assert answer["hookSpecificOutput"]["hookEventName"] == "PreToolUse"
    return answer["hookSpecificOutput"]


def make_coding_config(workspace, user=None, **rule):
    """Published v1 at level full: every destructive call gated, edits allowed (unless `rule` says otherwise)."""
    config = make_config(workspace, "Coding agent", pass_information_level="full")
    rule.setdefault("allow_edit", True)
    make_rule(config, kind="delete", match="*", message="Claude Code wants to destroy something.", **rule)
    publish(config, user)
    return config


class BrokenPortal:
    """A portal that answers every request 503, or (`silent`) takes the connection and never answers."""

    def __init__(self, *, silent: bool = False):
        self.silent = silent

    def __enter__(self) -> "BrokenPortal":
        if self.silent:
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.sock.listen(8)
            self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
            return self

        class Unavailable(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = b'{"error": {"code": "unavailable", "message": "The portal is restarting."}}'
                self.send_response(503)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_POST = do_GET

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self

    def __exit__(self, *exc) -> None:
        if self.silent:
            self.sock.close()
        else:
            self.server.shutdown()
            self.server.server_close()
