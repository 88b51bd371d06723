"""A burst of registrations across three workspaces (email, webhooks, one that never answers): another
workspace's single notification still goes out at once, and every delivery is accounted for."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from django.db import connections
from django.db.models.signals import post_init
from django.utils import timezone

from approvals.review.decide import approval_decide
from bench.channels import silent_endpoint
from contacts.fatigue import FATIGUE_LIMIT, fatigue_sort
from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from tests.helpers import make_member, register_gate
from tests.loopback import Receiver

from .outbox_support import notifying_world

pytestmark = [pytest.mark.django_db(transaction=True)]

PER_WORKSPACE = 60


@pytest.fixture
def other_receiver():
    with Receiver() as running:
        yield running


def burst(world: dict, prefix: str) -> list:
    """PER_WORKSPACE registrations from six engine threads at once."""

    def register(n: int) -> list:
        try:
            return [register_gate(world, run_id=f"{prefix}_{n}_{i}") for i in range(PER_WORKSPACE // 6)]
        finally:
            connections.close_all()

    with ThreadPoolExecutor(6) as pool:
        return [approval for batch in pool.map(register, range(6)) for approval in batch]


def test_a_burst_starves_no_one_and_every_delivery_is_accounted_for(
    receiver, other_receiver, mailbox, monkeypatch, settings
):
    settings.HITL_WEBHOOK_TIMEOUT_SECONDS = 1
    with silent_endpoint() as silent:
        worlds = {
            "acme": notifying_world(
                "acme",
                monkeypatch,
                mail=("email", "ops@acme.test"),
                hook=("webhook", receiver.url),
                stuck=("webhook", silent),
            ),
            "globex": notifying_world(
                "globex", monkeypatch, mail=("email", "ops@globex.test"), hook=("webhook", receiver.url)
            ),
            "initech": notifying_world(
                "initech", monkeypatch, mail=("email", "ops@initech.test"), hook=("webhook", receiver.url)
            ),
        }
        quiet = notifying_world("umbrella", monkeypatch, hook=("webhook", other_receiver.url))
        registered = {slug: burst(world, slug) for slug, world in worlds.items()}
        reviewer = make_member(worlds["acme"]["workspace"], "bob@acme.test", "reviewer")
        decided = registered["acme"][:10]
        for approval in decided:
            approval_decide(approval=approval, user=reviewer, decision="reject", reason="Not now")
        deliveries_send_due(seconds=0)  # the worker's send threads started, as a running cluster's are
        single = register_gate(quiet)
        # Until nothing is due: every row sent, held for a digest, skipped, or tried and waiting for its retry.
        run = threading.Thread(target=deliveries_send_due)
        started = time.monotonic()
        run.start()

        [event] = other_receiver.wait_for(1, "requested", timeout=2)

        assert time.monotonic() - started < 2
        assert event["subject"] == single.public_id
        run.join(timeout=60)
        assert not run.is_alive()

    rows = Delivery.objects.exclude(workspace=quiet["workspace"])
    assert rows.filter(status="failed").count() == 0
    # Decided before their turn: skipped, every one of them (the mail, the hook, the silent hook).
    decided_ids = [a.pk for a in decided]
    assert set(rows.filter(approval_id__in=decided_ids, event="requested").values_list("status", flat=True)) == {
        "skipped"
    }
    mail = rows.filter(channel="email", event="requested").exclude(approval_id__in=decided_ids)
    for world in worlds.values():
        theirs = mail.filter(workspace=world["workspace"])
        # The fatigue rule: the first FATIGUE_LIMIT of a minute alone (acme's skipped ones among them
        # count), the rest held for the digest at the end of their minute — still waiting for it, or, on
        # a run slow enough to reach it, sent in it.
        alone = theirs.filter(status="sent", digest=False).count()
        assert 1 <= alone <= 2 * FATIGUE_LIMIT  # a burst may straddle a minute
        assert theirs.filter(digest=True).exists()
        assert alone + theirs.filter(digest=True, status__in=["pending", "sent"]).count() == theirs.count()
    hooks = rows.filter(channel="webhook", event="requested").exclude(approval_id__in=decided_ids)
    stuck = hooks.filter(contact_public_id=worlds["acme"]["contacts"]["stuck"].public_id)
    assert set(stuck.values_list("status", flat=True)) == {"pending"}
    assert set(stuck.values_list("attempts", "last_error")) == {(1, "the endpoint did not answer within 1 s")}
    assert set(hooks.exclude(pk__in=stuck).values_list("status", flat=True)) == {"sent"}
    # What the receivers and the mailbox got is what the rows say was sent, once each.
    received = [e["id"] for e in receiver.events()]
    assert sorted(received) == sorted(rows.filter(channel="webhook", status="sent").values_list("public_id", flat=True))
    # A message for each row sent alone, and one for each digest sent (however many rows it carries).
    sent_mail = rows.filter(channel="email", status="sent")
    assert sent_mail.filter(digest=False).count() <= len(mailbox.messages) <= sent_mail.count()
    assert sum(len(r) for r in registered.values()) == 3 * PER_WORKSPACE


def test_a_message_already_on_its_way_when_its_request_is_decided_is_recorded_sent(receiver, monkeypatch):
    world = notifying_world("acme", monkeypatch, hook=("webhook", receiver.url))
    reviewer = make_member(world["workspace"], "bob@acme.test", "reviewer")
    approval = register_gate(world)

    def decide_while_it_arrives(event: dict) -> int:
        if event["type"].endswith(".requested"):  # the reviewer rejects as the message reaches the endpoint
            try:
                approval_decide(approval=approval, user=reviewer, decision="reject", reason="Not now")
            finally:
                connections.close_all()
        return 200

    receiver.answer = decide_while_it_arrives
    deliveries_send_due()

    assert [e["type"].rsplit(".", 1)[1] for e in receiver.events()] == ["requested", "decided"]
    # The endpoint got it: the outbox says sent, not skipped.
    assert Delivery.objects.get(approval=approval, event="requested").status == "sent"


def test_sorting_a_digests_followers_reads_none_of_its_rows(monkeypatch):
    """After a burst a digest holds thousands of rows; each claim holds a few of its followers, and
    learning that they are followers must not read the whole digest each time."""
    world = notifying_world("acme", monkeypatch, mail=("email", "ops@acme.test"))
    for i in range(40):
        register_gate(world, run_id=f"run_{i}")
    minute_ago = timezone.now() - timedelta(minutes=2)
    rows = Delivery.objects.filter(event="requested")
    for n, pk in enumerate(rows.order_by("pk").values_list("pk", flat=True)):
        rows.filter(pk=pk).update(
            digest=True, attempts=1, created_at=minute_ago.replace(second=0) + timedelta(seconds=n)
        )
    followers = list(rows.select_related("approval__config").order_by("-pk")[:2])
    read = []

    def loaded(sender, instance, **kwargs) -> None:
        read.append(instance)

    post_init.connect(loaded, sender=Delivery)
    try:
        sends = fatigue_sort(followers, now=timezone.now())
    finally:
        post_init.disconnect(loaded, sender=Delivery)

    assert sends == {}  # held for their leader's digest
    assert read == []
