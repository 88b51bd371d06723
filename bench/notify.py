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
import time
from typing import TYPE_CHECKING

import requests

from bench.channels import Rig, WebhookReceiver, latency_results

if TYPE_CHECKING:
    from bench.harness import Bench

SECRET = "whsec_YmVuY2gtc2lnbmluZy1zZWNyZXQtMzItYnl0ZXMhIQ=="


def run(bench: "Bench") -> list[dict]:
    """Its own webhook contact, notify rule, gunicorn and cluster, on the bench's workspace."""
    from django.db import connection

    from bench.harness import log
    from bench.server import PORT, load
    from contacts.services import contact_create
    from rules.services import config_publish, rule_create

    world = bench.world
    # The burst takes a minute a round; the registration pair takes seconds, so it gets every round
    # the run asks for (5 by default): on a shared machine three rounds of it spread 0.73–1.29×.
    rounds, duration, burst, samples = min(bench.rounds, 3), bench.duration, 1000, 100
    registration_rounds = bench.rounds
    receiver = WebhookReceiver()
    os.environ.update(
        HITL_BENCH_HOOK=receiver.url,
        HITL_BENCH_HOOK_SECRET=SECRET,
        HITL_BASE_URL=f"http://127.0.0.1:{PORT}",
    )
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

    results: dict = {}
    with Rig(bench, [receiver]) as rig:
        log(f"notify: registration → webhook received, {samples} samples, cluster running")
        rig.cluster.start()
        bodies = [{**notify_body, "run_id": f"lat_{i}"} for i in range(samples)]
        results["latency"] = latency_results(rig.latencies(receiver, bodies, what="notify"))
        rig.cluster.stop()

        log(f"notify: burst of {burst:,} deliveries vs a plain loop of signed POSTs, {rounds} rounds")
        bursts, floors = [], []
        for round_number in range(rounds):
            order = ("floor", "portal") if round_number % 2 == 0 else ("portal", "floor")
            for side in order:
                if side == "floor":
                    floors.append(_plain_loop(receiver, notify_body, burst))
                else:
                    prefix = f"burst_{round_number}_"
                    bodies = [{**notify_body, "run_id": f"{prefix}{i}"} for i in range(burst)]
                    bursts.append(rig.burst(bodies, [receiver], run_prefix=prefix))
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
    bench.results["notify"] = results
    return rows(results)


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
