"""The Slack transport in the notification outbox: what the cluster's sender does for a Slack contact."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals.expiry.expire import approval_sweep_overdue
from approvals.review.decide import approval_decide
from contacts.models import Delivery
from contacts.outbox import delivery_test_create
from contacts.sending import deliveries_send_due
from integrations.models import SlackMessage
from tests.helpers import register_gate, travel

from .conftest import CHANNEL

# The outbox sends on threads with connections of their own: they must see what the test committed.
pytestmark = [pytest.mark.usefixtures("fake_slack"), pytest.mark.django_db(transaction=True)]


def delivery(approval, event: str) -> Delivery:
    return Delivery.objects.get(approval=approval, event=event)


def test_a_registration_posts_the_message_to_the_contacts_channel(fake_slack, slack_world):
    approval = register_gate(slack_world)

    deliveries_send_due()

    [sent] = fake_slack.calls_to("chat.postMessage")
    assert sent["channel"] == CHANNEL
    assert sent["text"] == "Approve: Delete customer T-4821?"
    assert "Deleting a customer is final." in str(sent["blocks"])
    sent_row = delivery(approval, "requested")
    assert (sent_row.status, sent_row.attempts, sent_row.last_error) == ("sent", 1, "")
    message = SlackMessage.objects.get(approval=approval)
    assert (message.channel, message.contact_id) == (CHANNEL, slack_world["contact"].public_id)


def test_a_decision_made_anywhere_updates_the_message(fake_slack, slack_world, alice):
    approval = register_gate(slack_world)
    deliveries_send_due()

    approval_decide(approval=approval, user=alice, decision="reject", reason="Legal hold")  # the tab, API, CLI…
    deliveries_send_due()

    [update] = fake_slack.calls_to("chat.update")
    assert update["ts"] == SlackMessage.objects.get(approval=approval).ts
    assert not any(block["type"] == "actions" for block in update["blocks"])
    assert "Rejected by alice@acme.test at " in str(update["blocks"])
    assert delivery(approval, "decided").status == "sent"
    assert len(fake_slack.calls_to("chat.postMessage")) == 1  # updated in place, no second message


def test_an_expiry_updates_the_message_to_say_nobody_answered(fake_slack, slack_world):
    approval = register_gate(slack_world, ttl_seconds=600)
    deliveries_send_due()

    with travel(timedelta(minutes=11)):
        approval_sweep_overdue()
        deliveries_send_due()

    [update] = fake_slack.calls_to("chat.update")
    assert "Expired — nobody answered" in str(update["blocks"])
    assert delivery(approval, "expired").status == "sent"


def test_slacks_429_retry_after_is_honoured_by_the_outbox(fake_slack, slack_world):
    approval = register_gate(slack_world)
    fake_slack.throttle("chat.postMessage", retry_after=900)
    before = timezone.now()

    deliveries_send_due()

    row = delivery(approval, "requested")
    assert row.status == "pending" and row.attempts == 1
    assert row.last_error == "Slack rate-limited chat.postMessage (HTTP 429, retry after 900 s)"
    assert row.next_attempt_at >= before + timedelta(seconds=900)  # longer than the backoff's first step
    with travel(timedelta(minutes=14)):
        deliveries_send_due()
    assert delivery(approval, "requested").status == "pending"  # not before Slack said
    with travel(timedelta(minutes=19)):
        deliveries_send_due()
    assert delivery(approval, "requested").status == "sent"
    assert SlackMessage.objects.filter(approval=approval).count() == 1


def test_an_unset_channel_variable_fails_at_once_naming_it(fake_slack, slack_world, monkeypatch):
    monkeypatch.delenv("HITL_ACME_SLACK_APPROVERS")
    approval = register_gate(slack_world)

    deliveries_send_due()

    row = delivery(approval, "requested")
    assert (row.status, row.last_error) == ("failed", "HITL_ACME_SLACK_APPROVERS is not set")
    assert fake_slack.calls == []


def test_send_test_reaches_the_slack_channel(fake_slack, slack_world):
    row = delivery_test_create(contact=slack_world["contact"])

    deliveries_send_due()

    [sent] = fake_slack.calls_to("chat.postMessage")
    assert sent["channel"] == CHANNEL and sent["text"].startswith("Test message from the HITL Portal")
    row.refresh_from_db()
    assert row.status == "sent"


def test_a_halt_updates_the_messages_of_the_requests_it_rejects_and_asks_nothing_of_later_ones(
    fake_slack, slack_world, bob
):
    from approvals.halts.services import run_halt

    approval = register_gate(slack_world)
    deliveries_send_due()

    run_halt(workspace=slack_world["workspace"], user=bob, run_id="run_1", reason="Runaway loop")
    deliveries_send_due()

    [update] = fake_slack.calls_to("chat.update")
    assert update["ts"] == SlackMessage.objects.get(approval=approval).ts
    assert not any(block["type"] == "actions" for block in update["blocks"])
    assert "Rejected by bob@acme.test at " in str(update["blocks"]) and "Runaway loop" in str(update["blocks"])
    later = register_gate(slack_world, target="customer T-9")
    deliveries_send_due()
    assert later.status == "rejected" and not Delivery.objects.filter(approval=later).exists()
    assert len(fake_slack.calls_to("chat.postMessage")) == 1  # nobody is asked about a halted run's request
