"""Section: notifications — latency to the webhook, burst throughput beside a plain loop, registration cost.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only notify

1. Registration → webhook received, p50/p95, with the django-q2 cluster running (target p95 ≤ 1 s).
2. A burst of 1,000 notified requests, queued while no cluster runs, then sent by it: all
   delivered, none lost; deliveries/s beside a floor — the same receiver fed by a plain loop of
   signed POSTs of the same bodies (target ≥ 0.5× floor). Floor and portal alternate by round.
3. Registration throughput with a notify rule vs the same rule without one (target within 10%),
   with the cluster stopped so both sides measure the request thread alone.
"""

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

import requests

if TYPE_CHECKING:
    from bench.harness import Bench

SECRET = "whsec_YmVuY2gtc2lnbmluZy1zZWNyZXQtMzItYnl0ZXMhIQ=="


class _QuietServer(ThreadingHTTPServer):
    """A sender dropping its idle keep-alive connection (the cluster stopping) is no error: no traceback."""

    # A real endpoint's listen queue (nginx: 511), not socketserver's 5, which a loaded
    # machine overflows: a refused send then waits a minute for its retry.
    request_queue_size = 128

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Receiver:
    """A loopback webhook endpoint recording when each delivery id (and request) first arrived."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}  # subject (apr_…) or id → first arrival
        self.ids: set[str] = set()
        self.posts = 0
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                now = time.perf_counter()
                event = json.loads(body)
                with receiver.lock:
                    receiver.posts += 1
                    receiver.ids.add(self.headers.get("webhook-id", ""))
                    receiver.arrivals.setdefault(event.get("subject") or event["id"], now)
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def reset(self) -> None:
        with self.lock:
            self.arrivals.clear()
            self.ids.clear()
            self.posts = 0

    def wait(self, count: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while len(self.arrivals) < count and time.monotonic() < deadline:
            time.sleep(0.005)
        return len(self.arrivals) >= count


class Cluster:
    def __init__(self, env: dict[str, str], root) -> None:
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

    def stop(self) -> None:
        import signal

        if self.process and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:  # a delivery cut short is sent again: nothing is lost
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def run(bench: "Bench") -> list[dict]:
    """Its own webhook contact, notify rule, gunicorn and cluster, on the bench's workspace."""
    from bench.harness import ROOT, log
    from bench.server import PORT, Server, load

    world = bench.world
    # The burst takes a minute a round; the registration pair takes seconds, so it gets every round
    # the run asks for (5 by default): on a shared machine three rounds of it spread 0.73–1.29×.
    rounds, duration, burst, samples = min(bench.rounds, 3), bench.duration, 1000, 100
    registration_rounds = bench.rounds
    url = os.environ["BENCH_DATABASE_URL"]
    receiver = Receiver()
    os.environ.update(
        HITL_BENCH_HOOK=receiver.url,
        HITL_BENCH_HOOK_SECRET=SECRET,
        HITL_BASE_URL=f"http://127.0.0.1:{PORT}",
    )
    from django.db import connection

    from contacts.services import contact_create
    from rules.services import config_publish, rule_create

    hook = contact_create(
        config=world.config,
        name="Bench hook",
        channel="webhook",
        channel_ref="${HITL_BENCH_HOOK}",
        secret_ref="${HITL_BENCH_HOOK_SECRET}",
    )
    plain = rule_create(config=world.config, message="Check before deleting", order=20)
    notifying = rule_create(config=world.config, message="Check before deleting", order=30, notify=[hook.public_id])
    version = config_publish(config=world.config, user=None, note="bench notify")
    base = {**world.registration_body(), "config_version": version.number}
    plain_body = {**base, "rule_id": plain.public_id}
    notify_body = {**base, "rule_id": notifying.public_id}
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
    results: dict = {}
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {world.engine_token}"
    api = f"http://127.0.0.1:{PORT}/api/v1/approvals"
    try:
        log(f"notify: registration → webhook received, {samples} samples, cluster running")
        cluster.start()
        latencies = []
        for i in range(samples):
            receiver.reset()
            started = time.perf_counter()
            answer = session.post(api, json={**notify_body, "run_id": f"lat_{i}"}, timeout=30)
            public_id = answer.json()["id"]
            if not receiver.wait(1, timeout=15):
                raise SystemExit(f"notify: {public_id}'s webhook never arrived")
            latencies.append(receiver.arrivals[public_id] - started)
        results["latency"] = {
            "p50_ms": percentile(latencies, 50) * 1000,
            "p95_ms": percentile(latencies, 95) * 1000,
            "samples": samples,
        }
        cluster.stop()

        log(f"notify: burst of {burst:,} deliveries vs a plain loop of signed POSTs, {rounds} rounds")
        bursts, floors = [], []
        for round_number in range(rounds):
            order = ("floor", "portal") if round_number % 2 == 0 else ("portal", "floor")
            for side in order:
                if side == "floor":
                    floors.append(_plain_loop(receiver, notify_body, burst))
                else:
                    bursts.append(_burst(receiver, cluster, session, api, notify_body, burst, round_number))
        results["burst"] = {
            "portal_dps": statistics.median(b["dps"] for b in bursts),
            "floor_dps": statistics.median(floors),
            "ratios": [b["dps"] / f for b, f in zip(bursts, floors, strict=True)],
            "delivered": [b["delivered"] for b in bursts],
            "sent_rows": [b["sent_rows"] for b in bursts],
            "burst": burst,
        }

        log(f"notify: registration with vs without a notify rule (cluster stopped), {registration_rounds} rounds")
        plain_runs, notify_runs = [], []
        for round_number in range(registration_rounds):
            pair = [("plain", plain_body), ("notify", notify_body)]
            for name, body in pair if round_number % 2 == 0 else reversed(pair):
                run = load(world, method="POST", path="/api/v1/approvals", concurrency=8, duration=duration, body=body)
                (plain_runs if name == "plain" else notify_runs).append(run["throughput_rps"])
        results["registration"] = {
            "plain_rps": statistics.median(plain_runs),
            "notify_rps": statistics.median(notify_runs),
            "ratios": [n / p for n, p in zip(notify_runs, plain_runs, strict=True)],
        }
    finally:
        cluster.stop()
        server.stop()
        receiver.server.shutdown()
    bench.results["notify"] = results
    return rows(results)


def _burst(receiver, cluster, session, api, body, count, round_number) -> dict:
    """Queue `count` notified requests with no cluster running, start it, time first to last arrival."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connection

    receiver.reset()

    def register(i: int) -> str:
        return session.post(api, json={**body, "run_id": f"burst_{round_number}_{i}"}, timeout=30).json()["id"]

    with ThreadPoolExecutor(8) as pool:
        ids = set(pool.map(register, range(count)))
    cluster.start()
    deadline = time.monotonic() + 300
    while not ids <= set(receiver.arrivals) and time.monotonic() < deadline:  # ours, not a late repeat
        time.sleep(0.005)
    arrivals = sorted(receiver.arrivals[i] for i in ids if i in receiver.arrivals)
    time.sleep(1)
    cluster.stop()
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM contacts_delivery d JOIN approvals_approvalrequest a ON a.id = d.approval_id"
            " WHERE d.event = 'requested' AND d.status = 'sent' AND a.run_id LIKE %s",
            [f"burst_{round_number}_%"],
        )
        sent_rows = cursor.fetchone()[0]
    connection.close()
    span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else float("inf")
    return {
        "dps": (len(arrivals) - 1) / span,
        "delivered": len(arrivals),
        "sent_rows": sent_rows,
    }


def _plain_loop(receiver, body: dict, count: int) -> float:
    """The floor: one loop, one keep-alive session, the same CloudEvent shape signed per Standard Webhooks."""
    from datetime import UTC, datetime

    from standardwebhooks.webhooks import Webhook

    receiver.reset()
    signer = Webhook(SECRET)
    session = requests.Session()
    started = time.perf_counter()
    for i in range(count):
        msg_id = f"dlv_floor{i:012d}"
        event = {
            "specversion": "1.0",
            "id": msg_id,
            "source": "http://127.0.0.1",
            "type": "dev.hitl.approval.requested",
            "subject": f"apr_floor{i:012d}",
            "time": datetime.now(UTC).isoformat(),
            "datacontenttype": "application/json",
            "data": {"approval": body, "review_url": "http://127.0.0.1/"},
        }
        data = json.dumps(event, separators=(",", ":"))
        now = datetime.now(UTC)
        headers = {
            "webhook-id": msg_id,
            "webhook-timestamp": str(int(now.timestamp())),
            "webhook-signature": signer.sign(msg_id=msg_id, timestamp=now, data=data),
            "content-type": "application/cloudevents+json",
        }
        session.post(receiver.url, data=data.encode(), headers=headers, timeout=10)
    return count / (time.perf_counter() - started)


def rows(results: dict) -> list[dict]:
    """The figures as rows of the bench table."""
    from bench.report import row

    lat, burst, reg = results["latency"], results["burst"], results["registration"]
    burst_ratio = statistics.median(burst["ratios"])
    reg_ratio = statistics.median(reg["ratios"])
    all_delivered = all(d == burst["burst"] for d in burst["delivered"])
    return [
        row("registration → webhook p50", lat["p50_ms"], None, "ms", None, "—", True),
        row("registration → webhook p95", lat["p95_ms"], None, "ms", None, "≤ 1,000 ms", lat["p95_ms"] <= 1000),
        row(
            f"burst of {burst['burst']:,} webhooks (all delivered: {all_delivered})",
            burst["portal_dps"],
            burst["floor_dps"],
            "/s",
            burst_ratio,
            "≥ 0.5×",
            burst_ratio >= 0.5 and all_delivered,
            spread=(min(burst["ratios"]), max(burst["ratios"])),
        ),
        row(
            "registration, notify rule vs none (8 engines)",
            reg["notify_rps"],
            reg["plain_rps"],
            "/s",
            reg_ratio,
            "≥ 0.9×",
            reg_ratio >= 0.9,
            spread=(min(reg["ratios"]), max(reg["ratios"])),
        ),
    ]
