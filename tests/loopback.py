"""Stand-ins on loopback for what the portal talks to, and the subprocesses that run against the test database.

One module for every fake server the tests start — a customer's webhook endpoint (`Receiver`), Slack's
Web API (`FakeSlack`), an SMTP server (`Mailbox`), a Web Push service (`PushService`, with the
`FakeBrowser`s that decrypt what it was sent) — and for the real processes beside the test (a
django-q2 `Cluster`, and the helpers the fault tests' gunicorn uses). Only the far side of the network
is stood in for; everything on our side runs for real. The `receiver` and `mailbox` fixtures are
available to every test (tests/conftest.py imports them).

The webhook receiver verifies each signature with the Standard Webhooks reference algorithm written
out here — HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}", keyed by the base64-decoded
part of the whsec_ secret — not with the library the portal signs with, so a misuse of it fails.
"""

import base64
import email
import hashlib
import hmac
import itertools
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.db import connection

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "test-artifacts"
# Every fake here listens on loopback, where the portal never sends what a workspace aims (webhooks, push
# endpoints: contacts/outbound.py) unless the host allows it. The tests run as such a host: this allowance
# is for these fakes, and a test of the refusal itself takes it away (`settings.HITL_OUTBOUND_ALLOW = []`).
LOOPBACK_FAKES_ALLOWED = "127.0.0.1/32"

# -- the test database, for subprocesses -------------------------------------------------------------


def database_url() -> str:
    """The test database (pytest-django's test_…), as a URL for the subprocesses."""
    s = connection.settings_dict
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    return f"postgres://{s['USER']}{password}@{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"


def subprocess_env(**extra: str) -> dict[str, str]:
    """This process's environment, pointed at the test database, with `extra` on top."""
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(DATABASE_URL=database_url(), DJANGO_SETTINGS_MODULE="hitl_portal.settings", LOG_LEVEL="WARNING")
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Signal the process group we started (the subprocess and its children), then reap it."""
    if process.poll() is None:
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)


def wait_for(
    predicate: Callable[[], object], *, timeout: float, what: str | Callable[[], str], every: float = 0.02
) -> None:
    """Return as soon as `predicate()` is true; fail the test naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {timeout:.0f} s waiting for {what() if callable(what) else what}")
        time.sleep(every)


class Cluster:
    """`manage.py qcluster` on the test database, with `env` (the contacts' variables, say) in its environment.

    It polls its queue every 0.1 s (not the production 0.25 s) so a test waits for the work, not the poll.
    """

    def __init__(self, **env: str) -> None:
        self.env = {"Q_WORKERS": "2", "Q_POLL": "0.1", "HITL_DELIVERY_RETRY_BASE_SECONDS": "1", **env}
        self.process: subprocess.Popen | None = None
        self.log = open(ARTIFACTS / "cluster.log", "a") if ARTIFACTS.is_dir() else subprocess.DEVNULL

    def start(self) -> "Cluster":
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=subprocess_env(**self.env),
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        return self

    def kill(self, sig: int = signal.SIGKILL) -> None:
        assert self.process is not None
        stop(self.process, sig)

    def stop(self) -> None:
        """At the end of a test: SIGKILL, since nothing is left to finish (a graceful stop can take many seconds)."""
        if self.process is not None:
            stop(self.process, signal.SIGKILL)
        if self.log is not subprocess.DEVNULL:
            self.log.close()


# -- a customer's webhook endpoint ---------------------------------------------------------------------

SECRET = "whsec_" + base64.b64encode(b"a-test-signing-secret-of-32-bytes").decode()


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    offered = [part.split(",", 1)[1] for part in headers["webhook-signature"].split() if part.startswith("v1,")]
    return any(hmac.compare_digest(expected, sig) for sig in offered)


class Receiver:
    """Records each POST as (headers, parsed body); `answer` picks the status for each one."""

    def __init__(self, secret: str = SECRET) -> None:
        self.secret = secret
        self.received: list[tuple[dict[str, str], dict]] = []
        self.bad_signatures = 0
        self.answer: Callable[[dict], int] = lambda event: 200
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                if len(body) < length:  # the sender died mid-request (the fault tests kill it): nothing arrived
                    self.close_connection = True
                    return
                headers = {k.lower(): v for k, v in self.headers.items()}
                ok = {"webhook-id", "webhook-timestamp", "webhook-signature"} <= set(headers) and verify(
                    receiver.secret, headers, body
                )
                event = json.loads(body) if ok else {}
                with receiver.lock:
                    if ok:
                        receiver.received.append((headers, event))
                    else:
                        receiver.bad_signatures += 1
                status = receiver.answer(event) if ok else 401
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def events(self, type_suffix: str | None = None) -> list[dict]:
        with self.lock:
            events = [event for _, event in self.received]
        return [e for e in events if type_suffix is None or e["type"] == f"dev.hitl.approval.{type_suffix}"]

    def wait_for(self, count: int, type_suffix: str | None = None, timeout: float = 15) -> list[dict]:
        wait_for(
            lambda: len(self.events(type_suffix)) >= count,
            timeout=timeout,
            what=lambda: f"{count} {type_suffix or ''} events (received {len(self.events(type_suffix))})",
        )
        return self.events(type_suffix)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with Receiver() as running:
        yield running


# -- an SMTP server ------------------------------------------------------------------------------------


class Mailbox:
    """An SMTP server on loopback (aiosmtpd) keeping every message it is given as (recipients, message)."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        self.messages: list = []
        mailbox = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                mailbox.messages.append((envelope.rcpt_tos, email.message_from_bytes(envelope.content)))
                return "250 OK"

        self.port = free_port()
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        # Its thread logs every connection's end at INFO, also after pytest has closed the stream a test
        # captured into ("Logging error … I/O operation on closed file"); warnings and errors still show.
        logging.getLogger("mail.log").setLevel(logging.WARNING)


@pytest.fixture
def mailbox(settings) -> Iterator[Mailbox]:
    """Django's SMTP backend pointed at the loopback server (the settings an operator would set)."""
    box = Mailbox()
    box.controller.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "127.0.0.1"
    settings.EMAIL_PORT = box.port
    try:
        yield box
    finally:
        box.controller.stop()


def parts(message) -> dict[str, str]:
    """The text and HTML parts of a received message, by content type."""
    return {
        part.get_content_type(): part.get_payload(decode=True).decode()
        for part in message.walk()
        if part.get_content_type() in ("text/plain", "text/html")
    }


# -- Slack's Web API -----------------------------------------------------------------------------------


@dataclass
class Call:
    method: str  # "chat.postMessage"
    params: dict
    authorization: str


@dataclass
class FakeSlack:
    """A fake Slack Web API: records what the portal calls, answers like Slack.

    The portal's slack_sdk client is pointed at it through HITL_SLACK_API_URL (integrations' `fake_slack`).
    """

    users: dict[str, dict] = field(default_factory=dict)  # Slack user id → users.info "user"
    calls: list[Call] = field(default_factory=list)
    throttled: dict[str, list[int]] = field(default_factory=dict)  # method → Retry-After values to answer
    failing: dict[str, list[str]] = field(default_factory=dict)  # method → Slack error codes to answer

    def __post_init__(self):
        self._lock = threading.Lock()
        self._ts = itertools.count(1)
        self._server: ThreadingHTTPServer | None = None

    # set-up

    def reset(self) -> None:
        """As new: for a fake kept across tests (one portal server is pointed at it per module)."""
        with self._lock:
            for recorded in (self.users, self.calls, self.throttled, self.failing):
                recorded.clear()
            self._ts = itertools.count(1)

    def add_user(self, slack_id: str, email: str | None, **extra) -> None:
        profile = {"email": email} if email else {}
        self.users[slack_id] = {"id": slack_id, "name": slack_id.lower(), "profile": profile, **extra}

    def throttle(self, method: str, retry_after: int) -> None:
        """The next call of `method` answers 429 with this Retry-After."""
        self.throttled.setdefault(method, []).append(retry_after)

    def fail(self, method: str, error: str) -> None:
        self.failing.setdefault(method, []).append(error)

    # what was called

    def calls_to(self, method: str) -> list[dict]:
        with self._lock:
            return [call.params for call in self.calls if call.method == method]

    # the server

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


# -- a Web Push service (RFC 8030) and the browsers subscribed to it -----------------------------------


@dataclass
class PushedMessage:
    path: str  # /push/<browser>: which subscription it was sent to
    headers: dict[str, str]
    body: bytes  # aes128gcm ciphertext: what a browser decrypts with its keys


class PushService:
    """A push service on loopback: takes each POST to /push/<name> as the portal sends it and answers
    201 (a message accepted), or what `answers` says for that name (404/410 for a dead subscription,
    503, …). It decrypts nothing: the browsers do (`FakeBrowser.read`)."""

    def __init__(self) -> None:
        self.received: list[PushedMessage] = []
        self.answers: dict[str, list[int]] = {}  # name → statuses to answer, in turn (the last one stays)
        self.lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                name = self.path.removeprefix("/push/")
                with service.lock:
                    service.received.append(
                        PushedMessage(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    queued = service.answers.get(name) or [201]
                    status = queued.pop(0) if len(queued) > 1 else queued[0]
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/push/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "PushService":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def messages_to(self, name: str) -> list[PushedMessage]:
        with self.lock:
            return [m for m in self.received if m.path == f"/push/{name}"]

    def wait_for(self, name: str, count: int = 1, timeout: float = 15) -> list[PushedMessage]:
        wait_for(
            lambda: len(self.messages_to(name)) >= count,
            timeout=timeout,
            what=lambda: f"{count} push messages to {name} (received {len(self.messages_to(name))})",
        )
        return self.messages_to(name)


class FakeBrowser:
    """What a browser's PushManager.subscribe() makes: a P-256 key pair and a 16-byte auth secret,
    and an endpoint at the push service. It reads a message as a browser does (RFC 8291), with
    `http_ece` — the library pywebpush encrypts with, used here from the receiving side."""

    def __init__(self, service: PushService, name: str) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        self.name = name
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)
        point = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        self.subscription = {
            "endpoint": service.url + name,
            "expirationTime": None,
            "keys": {"p256dh": _b64url(point), "auth": _b64url(self.auth)},
        }

    def read(self, message: PushedMessage) -> dict:
        import http_ece

        assert message.headers["content-encoding"] == "aes128gcm"
        plain = http_ece.decrypt(message.body, private_key=self.key, auth_secret=self.auth, version="aes128gcm")
        return json.loads(plain)


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def vapid_signer_of(message: PushedMessage) -> str:
    """The public key (k=) a message's VAPID header names, once its JWT's ES256 signature is checked with it."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

    scheme, _, params = message.headers["authorization"].partition(" ")
    assert scheme == "vapid"
    fields = dict(part.strip().split("=", 1) for part in params.split(","))
    token, key = fields["t"], fields["k"]
    signed, _, signature = token.rpartition(".")
    raw = base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4))
    point = base64.urlsafe_b64decode(key + "=" * (-len(key) % 4))
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public.verify(der, signed.encode(), ec.ECDSA(hashes.SHA256()))  # raises InvalidSignature
    return key


@pytest.fixture
def push_service() -> Iterator[PushService]:
    with PushService() as running:
        yield running


# -- Telegram's Bot API --------------------------------------------------------------------------------


@dataclass
class FakeTelegram:
    """A fake Telegram Bot API: records what the portal calls (POST /bot<token>/<method>), answers like Telegram.

    The portal's client is pointed at it through HITL_TELEGRAM_API_URL (integrations' `fake_telegram`).
    """

    token: str = "123456:TEST-bot-token"
    calls: list[Call] = field(default_factory=list)
    throttled: dict[str, list[int]] = field(default_factory=dict)  # method → retry_after values to answer
    failing: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # method → (status, description)

    def __post_init__(self):
        self._lock = threading.Lock()
        self._ids = itertools.count(100)
        self._server: ThreadingHTTPServer | None = None

    def reset(self) -> None:
        with self._lock:
            for recorded in (self.calls, self.throttled, self.failing):
                recorded.clear()
            self._ids = itertools.count(100)

    def throttle(self, method: str, retry_after: int) -> None:
        self.throttled.setdefault(method, []).append(retry_after)

    def fail(self, method: str, status: int, description: str) -> None:
        self.failing.setdefault(method, []).append((status, description))

    def calls_to(self, method: str) -> list[dict]:
        with self._lock:
            return [call.params for call in self.calls if call.method == method]

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> "FakeTelegram":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                parts = urlsplit(self.path).path.strip("/").split("/")
                token = parts[0].removeprefix("bot") if parts and parts[0].startswith("bot") else ""
                method = parts[1] if len(parts) > 1 else ""
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                params = json.loads(raw) if raw else {}
                status, body = fake._answer(method, params, token)
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
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

    def _answer(self, method: str, params: dict, token: str) -> tuple[int, dict]:
        with self._lock:
            self.calls.append(Call(method=method, params=params, authorization=token))
            if token != self.token:
                return 401, {"ok": False, "error_code": 401, "description": "Unauthorized"}
            if self.throttled.get(method):
                wait = self.throttled[method].pop(0)
                return 429, {
                    "ok": False,
                    "error_code": 429,
                    "description": f"Too Many Requests: retry after {wait}",
                    "parameters": {"retry_after": wait},
                }
            if self.failing.get(method):
                status, description = self.failing[method].pop(0)
                return status, {"ok": False, "error_code": status, "description": description}
            if method == "sendMessage":
                message_id = next(self._ids)
                chat = {"id": int(params["chat_id"]) if str(params.get("chat_id", "")).lstrip("-").isdigit() else 0}
                return 200, {"ok": True, "result": {"message_id": message_id, "chat": chat, "text": params.get("text")}}
            if method == "editMessageText":
                return 200, {"ok": True, "result": {"message_id": params.get("message_id")}}
            if method in ("answerCallbackQuery", "setWebhook"):
                return 200, {"ok": True, "result": True}
            return 404, {"ok": False, "error_code": 404, "description": "Not Found: method not found"}
