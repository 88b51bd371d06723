"""Section: Telegram — registration → the bot's message received by the Bot API, p50/p95, cluster running.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only telegram

A Bot API stand-in on loopback (bench/channels.py) records when each request's sendMessage arrives
(it answers as Telegram does, with a message id); the portal's gunicorn and django-q2 cluster run
as deployed, the cluster pointed at it through HITL_TELEGRAM_API_URL. Target (issue 26): p95 ≤ 1 s.

Telegram reaches people, so the fatigue rule holds a contact's sixth request of a minute for a
digest: the samples rotate over CHATS contacts (one rule each), none told more than 5 a minute.
"""

import os
from typing import TYPE_CHECKING

from bench.channels import BotApi, Rig, latency_results, latency_rows

if TYPE_CHECKING:
    from bench.harness import Bench

CHAT = "-1001234567890"
CHATS = 25


def run(bench: "Bench") -> list[dict]:
    """Its own Telegram contacts and notify rules, gunicorn and cluster, on the bench's workspace."""
    from django.db import connection

    from bench.harness import log
    from bench.server import PORT
    from contacts.services import contact_create
    from rules.services import config_publish, rule_create

    world = bench.world
    samples = 20 if bench.args.quick else 100
    bot = BotApi()
    os.environ.update(
        HITL_BENCH_TELEGRAM_CHAT=CHAT,
        HITL_TELEGRAM_BOT_TOKEN=BotApi.TOKEN,
        HITL_TELEGRAM_API_URL=bot.url,
        HITL_BASE_URL=f"http://127.0.0.1:{PORT}",
    )
    rules = []
    for n in range(CHATS):
        chat = contact_create(
            config=world.config, name=f"Bench chat {n}", channel="telegram", channel_ref="${HITL_BENCH_TELEGRAM_CHAT}"
        )
        rules.append(rule_create(config=world.config, message="Check", order=40 + n, notify=[chat.public_id]))
    version = config_publish(config=world.config, user=None, note="bench telegram")
    body = {**world.registration_body(), "config_version": version.number}
    bodies = [{**body, "run_id": f"tg_{i}", "rule_id": rules[i % CHATS].public_id} for i in range(samples)]
    connection.close()
    with Rig(bench, [bot]) as rig:
        log(f"telegram: registration → Telegram message, {samples} samples, cluster running")
        rig.cluster.start()
        results = latency_results(rig.latencies(bot, bodies, what="telegram"))
    bench.results["telegram"] = results
    return latency_rows("Telegram message", results)
