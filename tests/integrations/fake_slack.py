"""A fake Slack Web API on 127.0.0.1: records what the portal calls, answers like Slack.

The portal's slack_sdk client is pointed at it through HITL_SLACK_API_URL, so everything on our
side of the network runs for real; only Slack is stood in for.
"""

import itertools
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit


@dataclass
class Call:
    method: str  # "chat.postMessage"
    params: dict
    authorization: str


@dataclass
class FakeSlack:
    users: dict[str, dict] = field(default_factory=dict)  # Slack user id → users.info "user"
    calls: list[Call] = field(default_factory=list)
    throttled: dict[str, list[int]] = field(default_factory=dict)  # method → Retry-After values to answer
    failing: dict[str, list[str]] = field(default_factory=dict)  # method → Slack error codes to answer

    def __post_init__(self):
        self._lock = threading.Lock()
        self._ts = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None

    # -- set-up --------------------------------------------------------------------------------

    def add_user(self, slack_id: str, email: str | None, **extra) -> None:
        profile = {"email": email} if email else {}
        self.users[slack_id] = {"id": slack_id, "name": slack_id.lower(), "profile": profile, **extra}

    def throttle(self, method: str, retry_after: int) -> None:
        """The next call of `method` answers 429 with this Retry-After."""
        self.throttled.setdefault(method, []).append(retry_after)

    def fail(self, method: str, error: str) -> None:
        self.failing.setdefault(method, []).append(error)

    # -- what was called ------------------------------------------------------------------------

    def calls_to(self, method: str) -> list[dict]:
        with self._lock:
            return [call.params for call in self.calls if call.method == method]

    # -- the server -----------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/api/"

    def start(self) -> "FakeSlack":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self._handle()

            def do_POST(self):
                self._handle()

            def _handle(self):
                parts = urlsplit(self.path)
                method = parts.path.removeprefix("/api/")
                params = dict(parse_qsl(parts.query))
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if raw:
                    if (self.headers.get("Content-Type") or "").startswith("application/json"):
                        params.update(json.loads(raw))
                    else:
                        params.update(parse_qsl(raw.decode()))
                status, headers, body = fake._answer(method, params, self.headers.get("Authorization") or "")
                data = json.dumps(body).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _answer(self, method: str, params: dict, authorization: str) -> tuple[int, dict, dict]:
        with self._lock:
            self.calls.append(Call(method=method, params=params, authorization=authorization))
            if self.throttled.get(method):
                retry_after = self.throttled[method].pop(0)
                return 429, {"Retry-After": str(retry_after)}, {"ok": False, "error": "ratelimited"}
            if self.failing.get(method):
                return 200, {}, {"ok": False, "error": self.failing[method].pop(0)}
            if not authorization.startswith("Bearer xoxb-"):
                return 200, {}, {"ok": False, "error": "not_authed"}
            if method == "chat.postMessage":
                ts = f"1764480000.{next(self._ts):06d}"
                return 200, {}, {"ok": True, "channel": params.get("channel"), "ts": ts, "message": {"ts": ts}}
            if method == "chat.update":
                return 200, {}, {"ok": True, "channel": params.get("channel"), "ts": params.get("ts")}
            if method == "chat.postEphemeral":
                return 200, {}, {"ok": True, "message_ts": f"1764480000.{next(self._ts):06d}"}
            if method == "views.open":
                return 200, {}, {"ok": True, "view": {"id": "V0001", **(params.get("view") or {})}}
            if method == "users.info":
                user = self.users.get(params.get("user", ""))
                if user is None:
                    return 200, {}, {"ok": False, "error": "user_not_found"}
                return 200, {}, {"ok": True, "user": user}
            return 200, {}, {"ok": False, "error": "unknown_method"}
