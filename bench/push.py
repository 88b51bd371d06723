"""Section: Web Push — registration → push message at the push service, with the cluster running.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only push

A `push` contact on its own rule; the bench's reviewer has subscribed two browsers (keys made as a
browser makes them) at a push service on loopback (bench/channels.py), which records when each
request's first message arrives — by its Topic header, the request's id, so nothing needs
decrypting here (tests/push decrypt what was sent). Target: p95 ≤ 1 s (issue 26), as the webhook's
(bench/notify.py).
"""

import os
from typing import TYPE_CHECKING

from bench.channels import PushService, Rig, latency_results, latency_rows

if TYPE_CHECKING:
    from bench.harness import Bench


def vapid_environment() -> None:
    """A VAPID key pair of this run's own, and plain http allowed for the push service on loopback."""
    from django.conf import settings

    from push.vapid import keys_new

    private, public = keys_new()
    os.environ.update(
        HITL_VAPID_PRIVATE_KEY=private,
        HITL_VAPID_PUBLIC_KEY=public,
        HITL_VAPID_SUBJECT="mailto:bench@bench.test",
        HITL_PUSH_ALLOW_HTTP="true",
    )
    settings.HITL_PUSH_ALLOW_HTTP = True


def run(bench: "Bench") -> list[dict]:
    from django.db import connection

    from bench.harness import log
    from bench.server import PORT
    from contacts.services import contact_create
    from rules.services import config_publish, rule_create

    world = bench.world
    samples = 20 if bench.args.quick else 100
    service = PushService()
    vapid_environment()
    os.environ["HITL_BASE_URL"] = f"http://127.0.0.1:{PORT}"
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
    bodies = [{**body, "rule_id": rules[i].public_id, "run_id": f"push_{i}"} for i in range(samples)]
    with Rig(bench, [service]) as rig:
        for name in ("phone", "laptop"):
            rig.subscribe(service, name)
        connection.close()
        log(f"push: registration → push message at the push service, {samples} samples, cluster running")
        rig.cluster.start()
        results = latency_results(rig.latencies(service, bodies, what="push"))
    bench.results["push"] = results
    return latency_rows("push message", results)
