"""A scripted Anthropic Messages API on loopback: Claude Code (the CLI the claude-agent-sdk wheel ships) runs offline.

The model is the far side of the network, so it is the one thing stood in for: Claude Code, its
permission flow, its hooks and the SDK around it run for real. The script: a request that offers
tools and has not yet seen a tool result is answered with the one scripted tool call; once the
conversation holds a tool result, with a short text (end of turn). Anything else Claude Code asks
on the side (a title, a summary) gets a short text too. Streaming (SSE) and plain answers both.
"""

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MODEL = "claude-sonnet-4-5"


class FakeAnthropic:
    """`with FakeAnthropic(tool_name, tool_input) as api:` … `api.url`; `api.tool_results` holds what Claude saw."""

    def __init__(self, tool_name: str, tool_input: dict):
        self.tool_name, self.tool_input = tool_name, tool_input
        self.tool_results: list[dict] = []
        self.requests: list[dict] = []
        self.ids = itertools.count(1)

    def answer(self, request: dict) -> tuple[list[dict], str]:
        """The content blocks and stop reason for one request."""
        self.requests.append(request)
        results = [
            block
            for message in request.get("messages", [])
            if message.get("role") == "user" and isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]
        if results:
            self.tool_results[:] = results
            return [{"type": "text", "text": "Done."}], "end_turn"
        if any(tool.get("name") == self.tool_name for tool in request.get("tools") or []):
            call = {"type": "tool_use", "id": f"toolu_fake{next(self.ids):04d}", "name": self.tool_name}
            return [{**call, "input": self.tool_input}], "tool_use"
        return [{"type": "text", "text": "Cleaning the build"}], "end_turn"

    def __enter__(self) -> "FakeAnthropic":
        fake = self

        class Messages(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
                    return self.send_json({"input_tokens": 10} if "count_tokens" in self.path else {})
                blocks, stop = fake.answer(request)
                message = {
                    "id": f"msg_fake{next(fake.ids):04d}",
                    "type": "message",
                    "role": "assistant",
                    "model": request.get("model", MODEL),
                    "stop_sequence": None,
                    "usage": {"input_tokens": 12, "output_tokens": 6},
                }
                if not request.get("stream"):
                    return self.send_json({**message, "content": blocks, "stop_reason": stop})
                self.send_events(message, blocks, stop)

            def do_GET(self) -> None:
                self.send_json({"data": [], "has_more": False})

            def send_json(self, body: dict) -> None:
                raw = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def send_events(self, message: dict, blocks: list[dict], stop: str) -> None:
                events = [("message_start", {"message": {**message, "content": [], "stop_reason": None}})]
                for index, block in enumerate(blocks):
                    if block["type"] == "tool_use":
                        start = {**block, "input": {}}
                        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
                    else:
                        start = {"type": "text", "text": ""}
                        delta = {"type": "text_delta", "text": block["text"]}
                    events += [
                        ("content_block_start", {"index": index, "content_block": start}),
                        ("content_block_delta", {"index": index, "delta": delta}),
                        ("content_block_stop", {"index": index}),
                    ]
                events += [
                    ("message_delta", {"delta": {"stop_reason": stop}, "usage": {"output_tokens": 6}}),
                    ("message_stop", {}),
                ]
                raw = "".join(f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n" for name, data in events)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(raw.encode())))
                self.end_headers()
                self.wfile.write(raw.encode())

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Messages)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def offline_env(api_url: str, home: str) -> dict[str, str]:
    """What Claude Code needs to talk to the fake only: its URL, a key, a home of its own, no other traffic."""
    return {
        "ANTHROPIC_BASE_URL": api_url,
        "ANTHROPIC_API_KEY": "sk-ant-test-offline",
        "HOME": home,
        "CLAUDE_CONFIG_DIR": f"{home}/.claude",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
