"""Section: the outbox with the people's channels mixed — deliveries/s beside a bare loop of the same messages.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only outbox

Issue 26: "the outbox's throughput with all three channels mixed ≥ 0.5× a bare loop posting the
same requests". Each request's rule notifies four contacts — email (an SMTP server, aiosmtpd),
Slack (a fake Web API), Telegram (a fake Bot API) and Web Push (a push service; the reviewer has
one browser subscribed) — all on loopback (bench/channels.py). The requests are registered with no
cluster running, then the cluster is started: deliveries/s from the first message to the last at
any far side, every one checked to have arrived and its row marked sent.

The floor is one loop in this process, no Django, posting the messages the portal's round sent
(captured by the far sides; the push payloads decrypted with the browser's keys and encrypted
again) to the same servers with the libraries the transports use: smtplib (one connection),
slack_sdk's WebClient, a requests session, pywebpush with the same VAPID key. Floor and portal
alternate by round, the portal first in the first (the floor needs its messages).

Everyone here is a person, so the fatigue rule (more than five requests a minute for one contact →
a digest) would hold most of a burst: each rule, with its own four contacts, takes GROUP requests.
"""

import os
import smtplib
import statistics
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import requests

from bench.channels import BotApi, Browser, FarSide, Mailbox, PushService, Rig, SlackApi
from bench.push import vapid_environment

if TYPE_CHECKING:
    from bench.harness import Bench

GROUP = 5  # contacts/sending.py's FATIGUE_LIMIT: this many requests a minute go out one by one
CHAT = "-1001234567890"
SLACK_CHANNEL = "C0BENCH01"


@dataclass
class Mixed:
    """The section's far sides and, per round, its requests: each round's rules and contacts are its
    own, so no contact is told of more than GROUP requests in a minute."""

    mailbox: Mailbox
    slack: SlackApi
    bot: BotApi
    push: PushService
    rounds: list[list[dict]]  # each round's registration bodies

    @property
    def far_sides(self) -> list[FarSide]:
        return [self.mailbox, self.slack, self.bot, self.push]


def mixed(bench: "Bench", *, count: int, rounds: int) -> Mixed:
    """Far sides on loopback, the environment pointing the portal at them, and `rounds` × `count` requests'
    bodies whose rules each notify an email, a Slack, a Telegram and a push contact of their own."""
    from bench.server import PORT
    from contacts.services import contact_create
    from rules.services import config_publish, rule_create

    world = bench.world
    setup = Mixed(mailbox=Mailbox(), slack=SlackApi(), bot=BotApi(), push=PushService(), rounds=[])
    vapid_environment()
    os.environ.update(
        EMAIL_URL=setup.mailbox.url,
        HITL_BENCH_MAIL_TO=world.reviewer.email,  # a reviewer's address: the email carries one-click links
        HITL_SLACK_BOT_TOKEN=SlackApi.TOKEN,
        HITL_SLACK_API_URL=setup.slack.url,
        HITL_BENCH_SLACK_CHANNEL=SLACK_CHANNEL,
        HITL_TELEGRAM_BOT_TOKEN=BotApi.TOKEN,
        HITL_TELEGRAM_API_URL=setup.bot.url,
        HITL_BENCH_TELEGRAM_CHAT=CHAT,
        HITL_BASE_URL=f"http://127.0.0.1:{PORT}",
    )
    refs = {
        "email": "${HITL_BENCH_MAIL_TO}",
        "slack": "${HITL_BENCH_SLACK_CHANNEL}",
        "telegram": "${HITL_BENCH_TELEGRAM_CHAT}",
        "push": "",
    }
    rules = []
    for n in range(rounds * -(-count // GROUP)):
        contacts = [
            contact_create(config=world.config, name=f"Bench mixed {channel} {n}", channel=channel, channel_ref=ref)
            for channel, ref in refs.items()
        ]
        rules.append(
            rule_create(config=world.config, message="Check", order=1000 + n, notify=[c.public_id for c in contacts])
        )
    version = config_publish(config=world.config, user=None, note="bench outbox")
    body = {**world.registration_body(), "config_version": version.number}
    per_round = len(rules) // rounds
    for r in range(rounds):
        mine = rules[r * per_round : (r + 1) * per_round]
        setup.rounds.append(
            [{**body, "run_id": f"mixed_{r}_{i}", "rule_id": mine[i // GROUP].public_id} for i in range(count)]
        )
    return setup


def run(bench: "Bench") -> list[dict]:
    from django.db import connection

    from bench.harness import log

    count = 100 if bench.args.quick else 500
    rounds = min(bench.rounds, 3)
    setup = mixed(bench, count=count, rounds=rounds)
    far_sides = setup.far_sides
    bursts, floors, messages = [], [], None
    with Rig(bench, far_sides) as rig:
        browser = rig.subscribe(setup.push, "phone")
        connection.close()
        log(f"outbox: {count:,} requests × 4 channels (email, Slack, Telegram, push) vs a bare loop, {rounds} rounds")
        for round_number in range(rounds):
            for side in ("portal", "floor") if round_number % 2 == 0 else ("floor", "portal"):
                if side == "portal":
                    bodies = setup.rounds[round_number]
                    bursts.append(rig.burst(bodies, far_sides, run_prefix=f"mixed_{round_number}_"))
                    messages = messages or captured(setup, browser)
                else:
                    floors.append(bare_loop(messages, setup, browser))
    ratios = [b["dps"] / f["dps"] for b, f in zip(bursts, floors, strict=True)]
    results = {
        "portal_dps": statistics.median(b["dps"] for b in bursts),
        "floor_dps": statistics.median(f["dps"] for f in floors),
        "floor_per_message_ms": floors[-1]["per_message_ms"],
        "cluster_cpu_ms": [b["cluster_cpu_ms"] for b in bursts],
        "ratios": ratios,
        "delivered": [b["delivered"] for b in bursts],
        "sent_rows": [b["sent_rows"] for b in bursts],
        "expected": count * len(far_sides),
        "requests": count,
    }
    bench.results["outbox"] = results
    return rows(results)


def captured(setup: Mixed, browser: Browser) -> list:
    """What the portal's round sent, one of each channel per request in turn: (channel, message)."""
    per_channel = [
        [("email", sent) for sent in setup.mailbox.sent],
        [("slack", params) for params in setup.slack.sent],
        [("telegram", sent) for sent in setup.bot.sent],
        [("push", (path, browser.read(body))) for path, body in setup.push.sent],
    ]
    return [message for turn in zip(*per_channel, strict=False) for message in turn]


def bare_loop(messages: list, setup: Mixed, browser: Browser) -> dict:
    """The floor: the same messages posted one after another, each channel's client kept for the loop;
    deliveries/s, and each channel's milliseconds per message."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from py_vapid import Vapid02
    from pywebpush import webpush
    from slack_sdk import WebClient

    for far_side in setup.far_sides:
        far_side.reset()
    mailbox, slack, bot = setup.mailbox, setup.slack, setup.bot
    raw = os.environ["HITL_VAPID_PRIVATE_KEY"]
    key = ec.derive_private_key(int.from_bytes(_b64url_decode(raw), "big"), ec.SECP256R1())
    signer = Vapid02(private_key=key)
    subscription = {"endpoint": browser.endpoint, "keys": browser.keys}
    web = requests.Session()
    slack_client = WebClient(token=SlackApi.TOKEN, base_url=slack.url, retry_handlers=[])
    spent = dict.fromkeys(("email", "slack", "telegram", "push"), 0.0)
    started = time.perf_counter()
    with smtplib.SMTP("127.0.0.1", mailbox.port) as smtp:
        for channel, message in messages:
            before = time.perf_counter()
            if channel == "email":
                mail_from, rcpt_tos, content = message
                smtp.sendmail(mail_from, rcpt_tos, content)
            elif channel == "slack":
                slack_client.api_call("chat.postMessage", json=message)
            elif channel == "telegram":
                path, params = message
                web.post(bot.url + path, json=params, timeout=10)
            else:
                path, payload = message
                topic = payload.split('"tag":"', 1)[1].split('"', 1)[0]
                webpush(
                    subscription_info=subscription,
                    data=payload,
                    vapid_private_key=signer,
                    vapid_claims={"sub": "mailto:bench@bench.test"},
                    ttl=12 * 3600,
                    headers={"Urgency": "high", "Topic": topic},
                    requests_session=web,
                )
            spent[channel] += time.perf_counter() - before
    elapsed = time.perf_counter() - started
    sent = {channel: sum(1 for c, _ in messages if c == channel) for channel in spent}
    per_message_ms = {channel: 1000 * spent[channel] / max(1, sent[channel]) for channel in spent}
    return {"dps": len(messages) / elapsed, "per_message_ms": per_message_ms}


def _b64url_decode(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def rows(results: dict) -> list[dict]:
    from bench.report import row

    ratio = statistics.median(results["ratios"])
    expected = results["expected"]
    all_delivered = all(d == expected for d in results["delivered"]) and all(
        s == expected for s in results["sent_rows"]
    )
    return [
        row(
            f"outbox, {results['requests']:,} requests × email, Slack, Telegram, push (all delivered: {all_delivered})",
            results["portal_dps"],
            results["floor_dps"],
            "/s",
            ratio,
            "≥ 0.5×",
            ratio >= 0.5 and all_delivered,
            spread=(min(results["ratios"]), max(results["ratios"])),
        )
    ]
