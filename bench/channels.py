"""What the outbox's sections share (notify, push, telegram, outbox): the far side of each channel on
loopback, the portal with its django-q2 cluster, and the wait for a request's message.

Each far side answers as the real service does and records when each request's first message
arrived, keyed by the request's id (apr_…), and what it was sent, so a floor can post the same
messages again. `Rig` runs gunicorn and the cluster as deployed and registers requests as an engine.

A section leaves nothing behind for the next: what it registered while no cluster ran, and the
retries to a far side it has stopped, would otherwise be sent by the next section's cluster, each
send to a vanished endpoint holding a worker until it times out; so a rig drops the outbox's
pending rows when it starts, closes its far sides' sockets (a send to them is refused at once, not
left waiting in a listen queue) and unsubscribes the browsers it subscribed.
"""

import email
import itertools
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

import requests

from bench.load import percentile

if TYPE_CHECKING:
    from bench.harness import Bench

# A request's page in a message's text (its card, its email), where no header names the request.
APPROVAL_ID = re.compile(r"/hitl/approvals/(apr_[a-z0-9]+)/")


class QuietServer(ThreadingHTTPServer):
    """A sender dropping its idle keep-alive connection (the cluster stopping) is no error: no traceback."""

    # A real endpoint's listen queue (nginx: 511), not socketserver's 5, which a loaded
    # machine overflows: a refused send then waits a minute for its retry.
    request_queue_size = 128
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FarSide:
    """A service the outbox sends to: the first arrival of each request's message, and what was sent."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.sent: list = []  # what each message was, for a floor to send again
        self.lock = threading.Lock()

    def arrived(self, key: str, sent=None) -> None:
        now = time.perf_counter()
        with self.lock:
            self.arrivals.setdefault(key, now)
            if sent is not None:
                self.sent.append(sent)

    def reset(self) -> None:
        with self.lock:
            self.arrivals.clear()
            self.sent.clear()

    def wait(self, keys, timeout: float) -> bool:
        """Until a message for each of `keys` has arrived; False after `timeout` seconds."""
        keys = set(keys)
        deadline = time.monotonic() + timeout
        while not keys <= self.arrivals.keys() and time.monotonic() < deadline:
            time.sleep(0.005)
        return keys <= self.arrivals.keys()

    def stop(self) -> None:
        raise NotImplementedError


class HttpFarSide(FarSide):
    """A far side over HTTP/1.1 with keep-alive; `answer(path, headers, body)` → (status, headers, body)."""

    path = "/"

    def __init__(self) -> None:
        super().__init__()
        far = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # The handler writes its headers and its body in two sends; with Nagle on, the body waits
            # for the client's delayed ACK on a keep-alive connection — a stall no real API adds.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, headers, data = far.answer(self.path, self.headers, body)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args) -> None:
                pass

        self.server = QuietServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{self.path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, path: str, headers, body: bytes) -> tuple[int, dict, bytes]:
        raise NotImplementedError

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()  # closed, not just unserved: a late send is refused rather than left hanging


def _json(answer: dict) -> tuple[int, dict, bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(answer).encode()


class WebhookReceiver(HttpFarSide):
    """A customer's webhook endpoint: each CloudEvent by its subject (the request) or its id (a test)."""

    path = "/hook"

    def __init__(self) -> None:
        super().__init__()
        self.posts = 0
        self.ids: set[str] = set()

    def answer(self, path: str, headers, body: bytes) -> tuple[int, dict, bytes]:
        event = json.loads(body)
        with self.lock:
            self.posts += 1
            self.ids.add(headers.get("webhook-id", ""))
        self.arrived(event.get("subject") or event["id"])
        return 200, {}, b""

    def reset(self) -> None:
        with self.lock:
            self.posts = 0
            self.ids.clear()
        super().reset()


@contextmanager
def silent_endpoint() -> Iterator[str]:
    """A webhook URL whose server accepts every connection (the kernel's backlog does) and never answers:
    each send to it waits for the portal's timeout."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(512)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    finally:
        listener.close()


class BotApi(HttpFarSide):
    """Telegram's Bot API: sendMessage / editMessageText answered with a message id, the card's request
    read from the link in its text."""

    TOKEN = "123456:BENCH-bot-token"

    def __init__(self) -> None:
        self.ids = itertools.count(1)
        super().__init__()
        self.url = self.url.rstrip("/")

    def answer(self, path: str, headers, body: bytes) -> tuple[int, dict, bytes]:
        params = json.loads(body or b"{}")
        found = APPROVAL_ID.search(str(params.get("text", "")))
        if path.endswith("/sendMessage") and found:
            self.arrived(found[1], (path, params))
        return _json({"ok": True, "result": {"message_id": next(self.ids)}})


class SlackApi(HttpFarSide):
    """Slack's Web API: chat.postMessage / chat.update answered with a ts, the request read from its blocks."""

    path = "/api/"
    TOKEN = "xoxb-bench-token"

    def __init__(self) -> None:
        self.ts = itertools.count(1)
        super().__init__()

    def answer(self, path: str, headers, body: bytes) -> tuple[int, dict, bytes]:
        params = json.loads(body or b"{}")
        found = APPROVAL_ID.search(json.dumps(params.get("blocks", "")))
        if path.endswith("/chat.postMessage") and found:
            self.arrived(found[1], params)
        ts = f"1764480000.{next(self.ts):06d}"
        return _json({"ok": True, "channel": params.get("channel"), "ts": ts, "message": {"ts": ts}})


class PushService(HttpFarSide):
    """A push service answering 201, each message known by its Topic header (the request's id): nothing
    is decrypted while the outbox sends, only afterwards by `plaintexts`, for the floor."""

    path = "/push/"

    def answer(self, path: str, headers, body: bytes) -> tuple[int, dict, bytes]:
        self.arrived(headers.get("Topic", ""), (path, body))
        return 201, {}, b""


class Browser:
    """What PushManager.subscribe() makes: a P-256 key pair and a 16-byte auth secret (and reads a message)."""

    def __init__(self, endpoint: str) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec

        from push.vapid import b64url

        self.endpoint = endpoint
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)
        point = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        self.keys = {"p256dh": b64url(point), "auth": b64url(self.auth)}

    def read(self, body: bytes) -> str:
        import http_ece

        return http_ece.decrypt(body, private_key=self.key, auth_secret=self.auth, version="aes128gcm").decode()


class Mailbox(FarSide):
    """An SMTP server (aiosmtpd), each message known by the request's page in its text."""

    def __init__(self) -> None:
        from aiosmtpd.controller import Controller

        super().__init__()
        mailbox = self

        class Handler:
            async def handle_DATA(self, server, session, envelope):
                message = email.message_from_bytes(envelope.content)
                text = next(p for p in message.walk() if p.get_content_type() == "text/plain")
                found = APPROVAL_ID.search(text.get_payload(decode=True).decode())
                if found:
                    mailbox.arrived(found[1], (envelope.mail_from, envelope.rcpt_tos, envelope.content))
                return "250 OK"

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.controller = Controller(Handler(), hostname="127.0.0.1", port=self.port)
        self.controller.start()
        self.url = f"smtp://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.controller.stop()


class Cluster:
    """`manage.py qcluster` on the bench database, as deployed (bench/results/notify-cluster.log)."""

    def __init__(self, env: dict[str, str], root: Path) -> None:
        self.env, self.root, self.process = env, root, None

    def start(self) -> None:
        log = open(self.root / "bench" / "results" / "notify-cluster.log", "a")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=self.root,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        time.sleep(3)  # the workers start and connect

    def cpu_seconds(self) -> float:
        """User and system CPU of the cluster's processes (the supervisor and its workers) so far."""
        import psutil

        root = psutil.Process(self.process.pid)
        total = 0.0
        for process in [root, *root.children(recursive=True)]:
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # a delivery cut short is sent again: nothing is lost
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def outbox_drop_pending(why: str) -> int:
    """Delete every delivery still pending: what earlier sections left for receivers that are gone."""
    from django.db import connection

    from bench.harness import log
    from contacts.models import Delivery, DeliveryStatus

    dropped, _ = Delivery.objects.filter(status=DeliveryStatus.PENDING).delete()
    connection.close()
    if dropped:
        log(f"dropped {dropped:,} pending deliveries {why}")
    return dropped


class Rig:
    """gunicorn and the cluster on the bench database, far sides on loopback, and an engine's session.

    Enter it after the section's contacts and rules are written; on leaving, everything it started stops.
    """

    def __init__(self, bench: "Bench", far_sides: list[FarSide]) -> None:
        from bench.server import PORT

        self.bench, self.far_sides, self.browsers = bench, far_sides, []
        self.url = os.environ["BENCH_DATABASE_URL"]
        self.api = f"http://127.0.0.1:{PORT}/api/v1/approvals"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {bench.world.engine_token}"
        self.server = self.cluster = None

    def subscribe(self, service: PushService, name: str, *, workspace=None, user=None) -> Browser:
        """A browser of `user` in `workspace` (the bench's reviewer by default) subscribed at `service`,
        unsubscribed when the rig stops."""
        from push.services import push_subscription_save

        browser = Browser(service.url + name)
        workspace, user = workspace or self.bench.world.workspace, user or self.bench.world.reviewer
        push_subscription_save(workspace=workspace, user=user, endpoint=browser.endpoint, **browser.keys)
        self.browsers.append((browser, workspace, user))
        return browser

    def __enter__(self) -> "Rig":
        from bench.harness import ROOT
        from bench.server import Server

        outbox_drop_pending("left by earlier sections (their receivers are gone)")
        env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "bench.settings",
            "BENCH_DATABASE_URL": self.url,
            "LOG_LEVEL": "WARNING",
            "Q_WORKERS": "2",
        }
        self.cluster = Cluster(env, ROOT)
        self.server = Server(self.url)
        return self

    def __exit__(self, *exc) -> None:
        from push.services import push_subscription_delete

        if self.cluster is not None:
            self.cluster.stop()
        if self.server is not None:
            self.server.stop()
        for far_side in self.far_sides:
            far_side.stop()
        for browser, workspace, user in self.browsers:
            push_subscription_delete(workspace=workspace, user=user, endpoint=browser.endpoint)
        outbox_drop_pending("this section left (follow-ups not yet due, sends nobody will answer)")

    def register(self, body: dict) -> str:
        return self.session.post(self.api, json=body, timeout=30).json()["id"]

    def burst(self, bodies: list[dict], far_sides: list[FarSide], *, run_prefix: str) -> dict:
        """Register `bodies` while no cluster runs, start it, and time the first to the last message at
        `far_sides` (one each per request); then stop it and count the `requested` rows marked sent.
        The bodies' run ids start with `run_prefix`."""
        from concurrent.futures import ThreadPoolExecutor

        from django.db import connection

        for far_side in far_sides:
            far_side.reset()
        with ThreadPoolExecutor(8) as pool:
            ids = set(pool.map(self.register, bodies))
        self.cluster.start()
        deadline = time.monotonic() + 300
        for far_side in far_sides:
            far_side.wait(ids, timeout=max(0.0, deadline - time.monotonic()))
        # Ours only, not a late repeat of an earlier round's.
        arrivals = sorted(t for far_side in far_sides for key, t in far_side.arrivals.items() if key in ids)
        time.sleep(1)
        cpu = self.cluster.cpu_seconds()
        self.cluster.stop()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM contacts_delivery d JOIN approvals_approvalrequest a ON a.id = d.approval_id"
                " WHERE d.event = 'requested' AND d.status = 'sent' AND a.run_id LIKE %s",
                [f"{run_prefix}%"],
            )
            sent_rows = cursor.fetchone()[0]
        connection.close()
        span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else float("inf")
        return {
            "dps": (len(arrivals) - 1) / span,
            "delivered": len(arrivals),
            "expected": len(ids) * len(far_sides),
            "sent_rows": sent_rows,
            # The cluster's own CPU (its processes, not PostgreSQL's) per message: steadier than a rate
            # on a shared machine.
            "cluster_cpu_ms": 1000 * cpu / max(1, len(arrivals)),
        }

    def latencies(self, far_side: FarSide, bodies: list[dict], *, what: str, timeout: float = 15) -> list[float]:
        """Registration → the request's first message at `far_side`, one request at a time, cluster running."""
        latencies = []
        for body in bodies:
            started = time.perf_counter()
            public_id = self.register(body)
            if not far_side.wait([public_id], timeout=timeout):
                raise SystemExit(f"{what}: {public_id}'s message never arrived")
            latencies.append(far_side.arrivals[public_id] - started)
        return latencies


def latency_results(latencies: list[float]) -> dict:
    return {
        "p50_ms": percentile(latencies, 50) * 1000,
        "p95_ms": percentile(latencies, 95) * 1000,
        "samples": len(latencies),
    }


def latency_rows(what: str, results: dict) -> list[dict]:
    """p50, and p95 beside the target every channel has (issue 26; the webhook's since issue 6): ≤ 1 s."""
    from bench.report import row

    p95 = results["p95_ms"]
    return [
        row(f"registration → {what} p50", results["p50_ms"], None, "ms", None, "—", True),
        row(f"registration → {what} p95", p95, None, "ms", None, "≤ 1,000 ms", p95 <= 1000),
    ]
