"""Section: Telegram — registration → the bot's message received by the Bot API, p50/p95, cluster running.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only telegram

A Bot API stand-in on loopback records when each request's sendMessage arrives (it answers as
Telegram does, with a message id); the portal's gunicorn and django-q2 cluster run as deployed,
the cluster pointed at it through HITL_TELEGRAM_API_URL. Target (issue 26): p95 ≤ 1 s.

Telegram reaches people, so the fatigue rule holds a contact's sixth request of a minute for a
digest: the samples rotate over CHATS contacts (one rule each), none told more than 5 a minute.
"""

import itertools
import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING

import requests

from bench.notify import Cluster, _QuietServer, percentile

if TYPE_CHECKING:
    from bench.harness import Bench

BOT_TOKEN = "123456:BENCH-bot-token"
CHAT = "-1001234567890"
CHATS = 25
APPROVAL_ID = re.compile(r"/hitl/approvals/(apr_[a-z0-9]+)/")


class BotApi:
    """The Bot API's sendMessage / editMessageText, recording when each request's card first arrived."""

    def __init__(self) -> None:
        self.arrivals: dict[str, float] = {}
        self.lock = threading.Lock()
        ids = itertools.count(1)
        bot = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                now = time.perf_counter()
                params = json.loads(body or b"{}")
                found = APPROVAL_ID.search(str(params.get("text", "")))
                if self.path.endswith("/sendMessage") and found:
                    with bot.lock:
                        bot.arrivals.setdefault(found[1], now)
                answer = json.dumps({"ok": True, "result": {"message_id": next(ids)}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args) -> None:
                pass

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, public_id: str, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while public_id not in self.arrivals and time.monotonic() < deadline:
            time.sleep(0.005)
        return public_id in self.arrivals


def run(bench: "Bench") -> list[dict]:
    """Its own Telegram contact, notify rule, gunicorn and cluster, on the bench's workspace."""
    from bench.harness import ROOT, log
    from bench.server import PORT, Server

    world = bench.world
    samples = 20 if bench.args.quick else 100
    url = os.environ["BENCH_DATABASE_URL"]
    bot = BotApi()
    os.environ.update(
        HITL_BENCH_TELEGRAM_CHAT=CHAT,
        HITL_TELEGRAM_BOT_TOKEN=BOT_TOKEN,
        HITL_TELEGRAM_API_URL=bot.url,
        HITL_BASE_URL=f"http://127.0.0.1:{PORT}",
    )
    from django.db import connection

    from contacts.services import contact_create
    from rules.services import config_publish, rule_create

    rules = []
    for n in range(CHATS):
        chat = contact_create(
            config=world.config, name=f"Bench chat {n}", channel="telegram", channel_ref="${HITL_BENCH_TELEGRAM_CHAT}"
        )
        rules.append(rule_create(config=world.config, message="Check", order=40 + n, notify=[chat.public_id]))
    version = config_publish(config=world.config, user=None, note="bench telegram")
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
    try:
        log(f"telegram: registration → Telegram message, {samples} samples, cluster running")
        cluster.start()
        latencies = []
        for i in range(samples):
            started = time.perf_counter()
            sample = {**body, "run_id": f"tg_{i}", "rule_id": rules[i % CHATS].public_id}
            public_id = session.post(api, json=sample, timeout=30).json()["id"]
            if not bot.wait_for(public_id, timeout=15):
                raise SystemExit(f"telegram: {public_id}'s message never reached the Bot API")
            latencies.append(bot.arrivals[public_id] - started)
    finally:
        cluster.stop()
        server.stop()
        bot.server.shutdown()
    results = {
        "p50_ms": percentile(latencies, 50) * 1000,
        "p95_ms": percentile(latencies, 95) * 1000,
        "samples": samples,
    }
    bench.results["telegram"] = results
    return rows(results)


def rows(results: dict) -> list[dict]:
    from bench.report import row

    return [
        row("registration → Telegram message p50", results["p50_ms"], None, "ms", None, "—", True),
        row(
            "registration → Telegram message p95",
            results["p95_ms"],
            None,
            "ms",
            None,
            "≤ 1,000 ms",
            results["p95_ms"] <= 1000,
        ),
    ]
