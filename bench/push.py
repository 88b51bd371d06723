"""Section: Web Push — registration → push message at the push service, with the cluster running.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only push

A `push` contact on its own rule; the bench's reviewer has subscribed two browsers (keys made as a
browser makes them) at a push service on loopback, which records when each request's first message
arrives — by its Topic header, the request's id, so nothing needs decrypting here (tests/push
decrypt what was sent). Target: p95 ≤ 1 s (issue 26), as the webhook's (bench/notify.py).
"""

import os
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING

import requests

from bench.notify import Cluster, _QuietServer, percentile

if TYPE_CHECKING:
    from bench.harness import Bench


class PushService:
    """A loopback push service answering 201, recording each request id's (Topic) first arrival."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.lock = threading.Lock()
        service = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                now = time.perf_counter()
                with service.lock:
                    service.arrivals.setdefault(self.headers.get("Topic", ""), now)
                self.send_response(201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/push/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait(self, topic: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while topic not in self.arrivals and time.monotonic() < deadline:
            time.sleep(0.005)
        return topic in self.arrivals


def browser_keys() -> dict[str, str]:
    """What PushManager.subscribe() gives: a P-256 public key and a 16-byte auth secret, base64url."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from push.vapid import b64url

    point = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    )
    return {"p256dh": b64url(point), "auth": b64url(os.urandom(16))}


def run(bench: "Bench") -> list[dict]:
    from django.conf import settings
    from django.db import connection

    from bench.harness import ROOT, log
    from bench.server import PORT, Server
    from contacts.services import contact_create
    from push.services import push_subscription_save
    from push.vapid import keys_new
    from rules.services import config_publish, rule_create

    world = bench.world
    samples = 20 if bench.args.quick else 100
    url = os.environ["BENCH_DATABASE_URL"]
    service = PushService()
    private, public = keys_new()
    os.environ.update(
        HITL_VAPID_PRIVATE_KEY=private,
        HITL_VAPID_PUBLIC_KEY=public,
        HITL_VAPID_SUBJECT="mailto:bench@bench.test",
        HITL_PUSH_ALLOW_HTTP="true",
        HITL_BASE_URL=f"http://127.0.0.1:{PORT}",
    )
    settings.HITL_PUSH_ALLOW_HTTP = True
    for name in ("phone", "laptop"):
        keys = browser_keys()
        push_subscription_save(workspace=world.workspace, user=world.reviewer, endpoint=service.url + name, **keys)
    # A contact and rule per sample: push reaches people, so past five requests a minute for one
    # contact the fatigue rule would hold the rest for a digest (contacts/sending.py) — not this figure.
    rules = []
    for i in range(samples):
        phones = contact_create(config=world.config, name=f"Bench phones {i}", channel="push")
        rules.append(
            rule_create(config=world.config, message="Check before deleting", order=100 + i, notify=[phones.public_id])
        )
    version = config_publish(config=world.config, user=None, note="bench push")
    body = {**world.registration_body(), "config_version": version.number}
    connection.close()

    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "bench.settings",
        "BENCH_DATABASE_URL": url,
        "LOG_LEVEL": "WARNING",
        "Q_WORKERS": "2",
    }
    cluster = Cluster(env, ROOT)
    server = Server(url)
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {world.engine_token}"
    api = f"http://127.0.0.1:{PORT}/api/v1/approvals"
    latencies = []
    try:
        log(f"push: registration → push message at the push service, {samples} samples, cluster running")
        cluster.start()
        for i in range(samples):
            started = time.perf_counter()
            sample = {**body, "rule_id": rules[i].public_id, "run_id": f"push_{i}"}
            public_id = session.post(api, json=sample, timeout=30).json()["id"]
            if not service.wait(public_id, timeout=15):
                raise SystemExit(f"push: {public_id}'s push message never arrived")
            latencies.append(service.arrivals[public_id] - started)
    finally:
        cluster.stop()
        server.stop()
        service.server.shutdown()
    results = {
        "p50_ms": percentile(latencies, 50) * 1000,
        "p95_ms": percentile(latencies, 95) * 1000,
        "samples": samples,
    }
    bench.results["push"] = results
    return rows(results)


def rows(results: dict) -> list[dict]:
    from bench.report import row

    p95 = results["p95_ms"]
    return [
        row("registration → push message p50", results["p50_ms"], None, "ms", None, "—", True),
        row("registration → push message p95", p95, None, "ms", None, "≤ 1,000 ms", p95 <= 1000),
    ]
