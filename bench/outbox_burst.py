"""Section: the outbox under a burst (issue 39) — another workspace's notification beside 10,000 registrations.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench --only outbox-burst

Three busy workspaces each have a rule that tells an email, a Slack, a Telegram, a push and a webhook
contact, all on the far sides of bench/channels.py; one of them also tells a webhook that accepts the
connection and never answers (each send to it waits the portal's timeout). BENCH_BURST_REQUESTS
(default 10,000) requests are registered through gunicorn by ENGINES engine threads, spread over the
three, while the django-q2 cluster runs; the busy workspace's reviewer rejects DECIDED of its requests
right after, through the API, so their notifications not yet sent are dropped, not sent late.

Meanwhile a fourth workspace registers one request every PACE seconds, from before the burst starts
until TAIL seconds after it ends; its rule tells one webhook of its own. The figure: registration
sent → its event at that webhook, p95 ≤ 2 s. Then the outbox is left DRAIN seconds at most to finish,
and every row is counted by what became of it: sent, skipped, failed, held by the silent endpoint
(tried and waiting for its retry, or not tried yet), a follow-up not yet due — and nothing else.
"""

import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import psycopg
import requests

from bench.channels import BotApi, Mailbox, PushService, Rig, SlackApi, WebhookReceiver, silent_endpoint
from bench.load import percentile
from bench.notify import SECRET
from bench.push import vapid_environment

if TYPE_CHECKING:
    from bench.harness import Bench

BUSY = ("acme", "globex", "initech")
OTHER = "umbrella"
STUCK = "acme"  # the busy workspace whose rule also tells the silent webhook, and whose reviewer decides
REQUESTS = int(os.environ.get("BENCH_BURST_REQUESTS", "10000"))
ENGINES = 8  # engine threads registering the burst at once
DECIDED = 500  # of STUCK's requests, rejected right after the burst
PACE, TAIL, MIN_SAMPLES = 1.0, 10.0, 20  # the other workspace: one request a second, until 10 s after the burst
DRAIN = float(os.environ.get("BENCH_BURST_DRAIN_SECONDS", "300"))
TARGET_MS = 2000
ANALYZE_EVERY = 20.0  # seconds
FOLLOWUPS = ("reminder", "escalated")  # scheduled at registration, due hours later


@dataclass
class Tenant:
    slug: str
    engine: requests.Session
    reviewer: requests.Session
    body: dict
    silent_contact: str = ""
    ids: list[str] = field(default_factory=list)


@dataclass
class Sample:
    public_id: str
    sent: float  # perf_counter before the POST
    answered: float  # perf_counter when its 201 came back (the request committed before it)
    during_burst: bool


def tenant(slug: str, rig: Rig, *, hook: str, push: PushService, silent: str = "") -> Tenant:
    """Workspace `slug`: a reviewer subscribed to push at `push`, a rule telling its contacts (the busy ones
    all five channels; the other one its webhook alone), an engine key and the reviewer's token. Made
    before the rig starts: gunicorn and the cluster read the contacts' variables from the environment."""
    from contacts.services import contact_create
    from rules.services import config_create, config_publish, config_update, rule_create
    from workspaces.services import member_add, token_create, workspace_create

    workspace = workspace_create(slug=slug, plan="pro")
    reviewer = member_add(workspace=workspace, email=f"reviewer@{slug}.test", role="reviewer").user
    config = config_create(workspace=workspace, name=f"{slug.title()} agent")
    config_update(config=config, pass_information_level="summary")
    prefix = f"HITL_{slug.upper()}_"
    hooks = {"hook": hook, **({"stuck": silent} if silent else {})}
    os.environ.update({f"{prefix}{name.upper()}": url for name, url in hooks.items()})
    os.environ.update({f"{prefix}{name.upper()}_SECRET": SECRET for name in hooks})
    refs = {f"{name} webhook": ("webhook", f"${{{prefix}{name.upper()}}}") for name in hooks}
    if slug != OTHER:
        os.environ.update(
            {
                f"{prefix}MAIL": reviewer.email,
                f"{prefix}SLACK": f"C0{slug.upper()}1",
                f"{prefix}CHAT": f"-100{1234567890 + BUSY.index(slug)}",
            }
        )
        refs.update(
            email=("email", f"${{{prefix}MAIL}}"),
            slack=("slack", f"${{{prefix}SLACK}}"),
            telegram=("telegram", f"${{{prefix}CHAT}}"),
            push=("push", ""),
        )
        rig.subscribe(push, slug, workspace=workspace, user=reviewer)
    contacts = {}
    for name, (channel, ref) in refs.items():
        secret = f"${{{ref[2:-1]}_SECRET}}" if channel == "webhook" else ""
        contacts[name] = contact_create(config=config, name=name, channel=channel, channel_ref=ref, secret_ref=secret)
    rule = rule_create(config=config, message="Check before deleting", notify=[c.public_id for c in contacts.values()])
    version = config_publish(config=config, user=None, note="bench outbox burst")
    sessions = []
    for owner in ({"engine_name": f"{slug}-engine"}, {"user": reviewer}):
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token_create(workspace=workspace, **owner)[1]}"
        sessions.append(session)
    body = {
        "kind": "gate",
        "config_id": config.public_id,
        "config_version": version.number,
        "rule_id": rule.public_id,
        "thread_id": f"thr_{slug}",
        "caller": "support-agent",
        "target": "crm/customers/42",
        "operation": "delete_record",
        "summary": "Delete customer 42 (duplicate of 41)",
    }
    stuck = contacts.get("stuck webhook")
    return Tenant(slug, *sessions, body, silent_contact=stuck.public_id if stuck else "")


def run(bench: "Bench") -> list[dict]:
    from django.db import connection

    from bench.server import PORT

    mailbox, slack, bot, push = Mailbox(), SlackApi(), BotApi(), PushService()
    hooks, other_hook = WebhookReceiver(), WebhookReceiver()
    vapid_environment()
    os.environ.update(
        EMAIL_URL=mailbox.url,
        HITL_SLACK_BOT_TOKEN=SlackApi.TOKEN,
        HITL_SLACK_API_URL=slack.url,
        HITL_TELEGRAM_BOT_TOKEN=BotApi.TOKEN,
        HITL_TELEGRAM_API_URL=bot.url,
        HITL_BASE_URL=f"http://127.0.0.1:{PORT}",
    )
    with silent_endpoint() as silent, analyzing():
        rig = Rig(bench, [mailbox, slack, bot, push, hooks, other_hook])
        busy = [tenant(s, rig, hook=hooks.url, push=push, silent=silent if s == STUCK else "") for s in BUSY]
        other = tenant(OTHER, rig, hook=other_hook.url, push=push)
        connection.close()
        with rig:
            rig.cluster.start()
            results = burst_and_drain(rig, busy, other, hooks=hooks, other_hook=other_hook)
    bench.results["outbox_burst"] = results
    return rows(results)


@contextmanager
def analyzing() -> Iterator[None]:
    """ANALYZE the tables the burst fills every ANALYZE_EVERY seconds, as autovacuum does on a deployed
    database: a server running with it off leaves them unanalyzed, and the planner then walks every
    request to find one contact's rows."""
    from bench.harness import log

    stop = threading.Event()

    def run() -> None:
        with psycopg.connect(os.environ["BENCH_DATABASE_URL"], autocommit=True) as conn:
            while not stop.wait(ANALYZE_EVERY):
                conn.execute("ANALYZE contacts_delivery, approvals_approvalrequest")

    with psycopg.connect(os.environ["BENCH_DATABASE_URL"], autocommit=True) as conn:
        if conn.execute("SHOW autovacuum").fetchone()[0] == "on":
            yield
            return
    log("outbox-burst: autovacuum is off on this server; the section analyzes its tables itself")
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def burst_and_drain(rig: Rig, busy: list[Tenant], other: Tenant, *, hooks, other_hook) -> dict:
    from bench.harness import log

    log(
        f"outbox-burst: {REQUESTS:,} registrations over {', '.join(BUSY)} from {ENGINES} engine threads;"
        f" {OTHER} registers one every {PACE:.0f} s"
    )
    results = measure(rig, busy, other, other_hook)
    log(
        f"outbox-burst: {OTHER}'s notification p50 {results['p50_ms']:,.0f} ms, p95 {results['p95_ms']:,.0f} ms,"
        f" max {results['max_ms']:,.0f} ms ({results['samples']} samples)"
    )
    log(f"outbox-burst: waiting up to {DRAIN:.0f} s for the outbox to drain")
    results["drain_s"] = drain([t.silent_contact for t in busy if t.silent_contact])
    results["accounts"] = accounts(busy + [other], hooks=hooks, other_hook=other_hook)
    results["cluster_cpu_s"] = rig.cluster.cpu_seconds()
    return results


def measure(rig: Rig, busy: list[Tenant], other: Tenant, other_hook: WebhookReceiver) -> dict:
    """The burst, the rejections after it, and the other workspace's requests all along; their latencies."""
    from bench.harness import log

    samples: list[Sample] = []
    burst_over = threading.Event()
    sampler = threading.Thread(target=sample, args=(rig, other, samples, burst_over), daemon=True)
    sampler.start()
    time.sleep(3 * PACE)  # a few samples on a quiet outbox first
    started = time.perf_counter()
    failures = burst(rig, busy)
    took = time.perf_counter() - started
    load_after_burst = os.getloadavg()
    burst_over.set()
    log(
        f"outbox-burst: registered in {took:.0f} s ({REQUESTS / took:.0f}/s, {failures} failed);"
        f" load average {load_after_burst[0]:.1f}"
    )
    decided = decide(rig, busy[BUSY.index(STUCK)])
    sampler.join()
    missing = [s.public_id for s in samples if not other_hook.wait([s.public_id], timeout=30)]
    latencies = [other_hook.arrivals.get(s.public_id, float("inf")) - s.sent for s in samples]
    after_answer = [other_hook.arrivals.get(s.public_id, float("inf")) - s.answered for s in samples]
    during = [lat for lat, s in zip(latencies, samples, strict=True) if s.during_burst]
    return {
        "requests": REQUESTS,
        "registration_failures": failures,
        "burst_s": took,
        "registrations_per_s": REQUESTS / took,
        "load_average_after_burst": load_after_burst,
        "decided": decided,
        "samples": len(samples),
        "samples_during_burst": len(during),
        "missing": missing,
        # (seconds since the burst started, latency ms) a sample: where the slow ones fall (a run's end?)
        "timeline": [
            (round(s.sent - started, 1), round(lat * 1000)) for s, lat in zip(samples, latencies, strict=True)
        ],
        **{f"{p}_ms": percentile(latencies, q) * 1000 for p, q in (("p50", 50), ("p95", 95), ("max", 100))},
        "p95_during_burst_ms": percentile(during, 95) * 1000 if during else None,
        "p95_after_answer_ms": percentile(after_answer, 95) * 1000,
        "registration_p95_ms": percentile([s.answered - s.sent for s in samples], 95) * 1000,
    }


def burst(rig: Rig, busy: list[Tenant]) -> int:
    """REQUESTS registrations spread over the busy workspaces from ENGINES threads; how many failed."""
    local = threading.local()

    def register(n: int) -> bool:
        owner = busy[n % len(busy)]
        sessions = local.__dict__.setdefault("sessions", {})
        if owner.slug not in sessions:  # a keep-alive connection per engine thread and workspace
            sessions[owner.slug] = requests.Session()
            sessions[owner.slug].headers.update(owner.engine.headers)
        answer = sessions[owner.slug].post(rig.api, json={**owner.body, "run_id": f"burst_{n}"}, timeout=60)
        if answer.status_code != 201:
            return False
        owner.ids.append(answer.json()["id"])
        return True

    with ThreadPoolExecutor(ENGINES) as pool:
        return sum(1 for ok in pool.map(register, range(REQUESTS)) if not ok)


def sample(rig: Rig, other: Tenant, samples: list[Sample], burst_over: threading.Event) -> None:
    """One registration every PACE seconds in the other workspace, until TAIL seconds after the burst."""
    ends = None
    n = 0
    while ends is None or time.perf_counter() < ends or len(samples) < MIN_SAMPLES:
        tick = time.perf_counter()
        if ends is None and burst_over.is_set():
            ends = tick + TAIL
        answer = other.engine.post(rig.api, json={**other.body, "run_id": f"other_{n}"}, timeout=60)
        answered = time.perf_counter()
        samples.append(Sample(answer.json()["id"], tick, answered, during_burst=ends is None))
        n += 1
        time.sleep(max(0.0, tick + PACE - time.perf_counter()))


def decide(rig: Rig, owner: Tenant) -> int:
    """The reviewer rejects the last DECIDED requests registered: their notifications still pending are
    dropped (`skipped`), never sent late. How many were decided."""
    chosen = owner.ids[-DECIDED:]

    def reject(public_id: str) -> bool:
        answer = owner.reviewer.post(
            f"{rig.api}/{public_id}/decision", json={"decision": "reject", "reason": "Not now"}, timeout=60
        )
        return answer.status_code == 200

    with ThreadPoolExecutor(2) as pool:
        return sum(pool.map(reject, chosen))


def outstanding(silent: list[str]) -> int:
    """Rows still to go: pending, neither a follow-up scheduled for later nor the silent endpoint's."""
    from contacts.models import Delivery, DeliveryStatus

    return (
        Delivery.objects.filter(status=DeliveryStatus.PENDING)
        .exclude(event__in=FOLLOWUPS)
        .exclude(contact_public_id__in=silent)
        .count()
    )


def drain(silent: list[str]) -> float:
    """Until nothing is outstanding, or DRAIN seconds; how long it took."""
    from django.db import connection

    started = time.monotonic()
    while outstanding(silent) and time.monotonic() - started < DRAIN:
        connection.close()
        time.sleep(2)
    return time.monotonic() - started


def accounts(tenants: list[Tenant], *, hooks: WebhookReceiver, other_hook: WebhookReceiver) -> dict:
    """Every row of the four workspaces by what became of it, and whether the webhooks got what was sent."""
    from django.db import connection

    from contacts.models import Delivery

    silent = [t.silent_contact for t in tenants if t.silent_contact]
    rows = Delivery.objects.filter(workspace__slug__in=[t.slug for t in tenants])
    counts = {"total": rows.count()}
    for status in ("sent", "skipped", "failed"):
        counts[status] = rows.filter(status=status).count()
    counts["digested"] = rows.filter(status="sent", digest=True).count()
    pending = rows.filter(status="pending")
    counts["silent_tried"] = pending.filter(contact_public_id__in=silent, attempts__gt=0).count()
    counts["silent_untried"] = pending.filter(contact_public_id__in=silent, attempts=0).count()
    counts["followups_later"] = pending.exclude(contact_public_id__in=silent).filter(event__in=FOLLOWUPS).count()
    counts["left"] = pending.exclude(contact_public_id__in=silent).exclude(event__in=FOLLOWUPS).count()
    hooks_sent = rows.filter(channel="webhook", status="sent").exclude(contact_public_id__in=silent)
    counts["webhooks_sent"] = hooks_sent.count()
    counts["webhooks_received"] = len(hooks.ids | other_hook.ids)
    connection.close()
    named = ("sent", "skipped", "failed", "silent_tried", "silent_untried", "followups_later", "left")
    counts["accounted"] = sum(counts[k] for k in named)
    return counts


def rows(results: dict) -> list[dict]:
    from bench.report import row

    a, load = results["accounts"], results["load_average_after_burst"][0]
    what = f"{results['requests']:,} registrations in a burst over 3 workspaces (load {load:.1f})"
    met = results["p95_ms"] <= TARGET_MS and not results["missing"]
    every = a["accounted"] == a["total"] and a["left"] == 0 and a["webhooks_received"] == a["webhooks_sent"]
    return [
        row(f"{what}: another workspace's notification p50", results["p50_ms"], None, " ms", None, "—", None),
        row(
            f"{what}: another workspace's notification p95 ({results['samples']} samples, max"
            f" {results['max_ms']:,.0f} ms)",
            results["p95_ms"],
            None,
            " ms",
            None,
            f"≤ {TARGET_MS:,} ms",
            met,
        ),
        row(
            f"the burst's {a['total']:,} deliveries: {a['sent']:,} sent ({a['digested']:,} in digests),"
            f" {a['skipped']:,} skipped, {a['failed']:,} failed, {a['silent_tried'] + a['silent_untried']:,} held by"
            f" the silent webhook, {a['followups_later']:,} follow-ups not yet due; left after"
            f" {results['drain_s']:.0f} s",
            a["left"],
            None,
            "",
            None,
            "0, all accounted for",
            every,
        ),
    ]
