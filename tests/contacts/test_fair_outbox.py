"""The outbox is fair (contacts/claiming.py, contacts/sending.py): a backlog of one workspace or one slow
endpoint never delays another's notification, and a request decided before its turn is not told late."""

import threading
import time

import pytest

from approvals.review.decide import approval_decide
from bench.channels import silent_endpoint
from contacts.claiming import PER_CONTACT, deliveries_claim
from contacts.models import Delivery
from contacts.sending import PER_CONTACT_IN_FLIGHT, deliveries_send_due
from tests.helpers import make_member, register_gate
from tests.loopback import Receiver

from .outbox_support import notifying_world

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def other_receiver():
    with Receiver() as running:
        yield running


def test_a_backlog_in_one_workspace_does_not_queue_another_workspaces_single_notification(
    receiver, other_receiver, monkeypatch
):
    acme = notifying_world("acme", monkeypatch, hook=("webhook", receiver.url), ops=("webhook", receiver.url))
    globex = notifying_world("globex", monkeypatch, hook=("webhook", other_receiver.url))
    for i in range(150):
        register_gate(acme, run_id=f"run_{i}")
    single = register_gate(globex)

    claimed = deliveries_claim(limit=10)

    assert single.pk in {d.approval_id for d in claimed}
    per_contact = {}
    for delivery in claimed:
        per_contact[delivery.contact_public_id] = per_contact.get(delivery.contact_public_id, 0) + 1
    assert max(per_contact.values()) <= PER_CONTACT
    # The claimed rows are leased: nobody else takes them, and the rest stay due.
    assert Delivery.objects.filter(pk__in=[d.pk for d in claimed], attempts=1).count() == len(claimed)
    unclaimed = Delivery.objects.filter(event="requested", status="pending", attempts=0)
    assert unclaimed.count() == 300 - (len(claimed) - 1)


def test_a_webhook_that_never_answers_does_not_hold_another_notification(receiver, monkeypatch, settings):
    settings.HITL_WEBHOOK_TIMEOUT_SECONDS = 3
    with silent_endpoint() as silent:
        acme = notifying_world("acme", monkeypatch, stuck=("webhook", silent))
        globex = notifying_world("globex", monkeypatch, hook=("webhook", receiver.url))
        for i in range(30):
            register_gate(acme, run_id=f"run_{i}")
        single = register_gate(globex)
        deliveries_send_due(seconds=0)  # the worker's send threads started, as a running cluster's are
        run = threading.Thread(target=deliveries_send_due, kwargs={"seconds": 4})
        started = time.monotonic()
        run.start()

        [event] = receiver.wait_for(1, "requested", timeout=2)

        assert time.monotonic() - started < 2
        assert event["subject"] == single.public_id
        run.join(timeout=30)
        assert not run.is_alive()
    stuck = Delivery.objects.filter(workspace=acme["workspace"], event="requested")
    assert set(stuck.values_list("status", flat=True)) == {"pending"}  # retrying, or not tried yet
    tried = stuck.filter(attempts=1)
    assert set(tried.values_list("last_error", flat=True)) == {"the endpoint did not answer within 3 s"}
    # A few at a time (at most two rounds in the run's four seconds), never the whole backlog at once.
    assert 1 <= tried.count() <= 2 * PER_CONTACT_IN_FLIGHT
    assert stuck.filter(attempts=0).count() == 30 - tried.count()
    assert Delivery.objects.get(approval=single, event="requested").status == "sent"


def test_a_request_decided_before_its_turn_is_skipped_not_told_late(receiver, monkeypatch):
    acme = notifying_world("acme", monkeypatch, hook=("webhook", receiver.url))
    bob = make_member(acme["workspace"], "bob@acme.test", "reviewer")
    approval = register_gate(acme)
    approval_decide(approval=approval, user=bob, decision="reject", reason="Not this customer")

    deliveries_send_due()

    requested = Delivery.objects.get(approval=approval, event="requested")
    assert (requested.status, requested.attempts) == ("skipped", 0)
    assert Delivery.objects.get(approval=approval, event="decided").status == "sent"
    assert [event["type"] for event in receiver.events()] == ["dev.hitl.approval.decided"]
