"""Reminders and escalations: scheduled when the sender first takes up a request, sent only while it waits.

A registration writes one `requested` row per notified contact and nothing more (its cost is on the
engines' hot path); the sender, claiming that row, writes the request's follow-ups in the same
transaction. These tests follow them to the receiver.
"""

import pytest
from django.utils import timezone

from approvals.review.decide import approval_decide
from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from contacts.services import contact_create

from ..helpers import make_rule, publish, register_gate

pytestmark = [pytest.mark.django_db(transaction=True)]


def _come_due(approval, event: str) -> None:
    """Move a scheduled follow-up's time to now, as if its hour had passed."""
    assert Delivery.objects.filter(approval=approval, event=event).update(next_attempt_at=timezone.now()) >= 1


@pytest.fixture
def escalating(notified) -> dict:
    """The notified world plus a rule notifying the hook and escalating after 10 minutes to a second contact
    (the same endpoint)."""
    leads = contact_create(
        config=notified["config"],
        name="Leads hook",
        channel="webhook",
        channel_ref="${HITL_ACME_TEST_HOOK}",
        secret_ref="${HITL_ACME_TEST_HOOK_SECRET}",
    )
    rule = make_rule(
        notified["config"],
        message="Escalate if nobody answers",
        order=40,
        notify=[notified["hook"].public_id],
        escalate_to=[leads.public_id],
        escalate_after_seconds=600,
    )
    return {**notified, "rule": rule, "leads": leads, "version": publish(notified["config"])}


def test_a_registration_writes_only_the_requested_row_and_the_sender_schedules_the_reminder(
    notified, receiver, hook_env
):
    approval = register_gate(notified, ttl_seconds=3600)
    assert list(Delivery.objects.filter(approval=approval).values_list("event", flat=True)) == ["requested"]

    deliveries_send_due()
    [requested] = receiver.events("requested")
    reminder = Delivery.objects.get(approval=approval, event="reminder")
    assert reminder.status == "pending"
    # One hour lifetime (< 5 h): the reminder is due at 80% of it.
    assert abs((reminder.next_attempt_at - approval.created_at).total_seconds() - 2880) < 1
    assert receiver.events("reminder") == []

    _come_due(approval, "reminder")
    deliveries_send_due()
    [event] = receiver.events("reminder")
    assert event["subject"] == approval.public_id and event["id"] == reminder.public_id
    assert event["id"] != requested["id"]
    # Sending again sends nothing more: at most one reminder per (request, contact).
    deliveries_send_due()
    assert len(receiver.events("reminder")) == 1 and len(receiver.events("requested")) == 1


def test_a_request_decided_before_its_reminder_and_escalation_sends_neither(escalating, receiver, hook_env):
    approval = register_gate(escalating, ttl_seconds=3600)
    deliveries_send_due()
    assert len(receiver.events("requested")) == 1
    scheduled = set(
        Delivery.objects.filter(approval=approval, status="pending").values_list("event", "contact_public_id")
    )
    assert scheduled == {("reminder", escalating["hook"].public_id), ("escalated", escalating["leads"].public_id)}

    approval_decide(approval=approval, user=escalating["bob"], decision="approve")
    Delivery.objects.filter(approval=approval).update(next_attempt_at=timezone.now())
    deliveries_send_due()
    assert receiver.events("reminder") == [] and receiver.events("escalated") == []
    assert [e["subject"] for e in receiver.events("decided")] == [approval.public_id]


def test_an_escalation_goes_out_when_due_and_its_contact_hears_the_decision(escalating, receiver, hook_env):
    approval = register_gate(escalating, ttl_seconds=3600)
    deliveries_send_due()
    _come_due(approval, "escalated")
    deliveries_send_due()
    [escalated] = receiver.events("escalated")
    assert escalated["subject"] == approval.public_id
    assert receiver.events("reminder") == []  # not due yet

    approval_decide(approval=approval, user=escalating["bob"], decision="reject", reason="No")
    deliveries_send_due()
    told = Delivery.objects.filter(approval=approval, event="decided").values_list("contact_public_id", flat=True)
    assert set(told) == {escalating["hook"].public_id, escalating["leads"].public_id}
    assert len(receiver.events("decided")) == 2


def test_a_rule_that_only_escalates_schedules_its_escalation_at_registration(notified, receiver, hook_env):
    rule = make_rule(
        notified["config"],
        message="Only escalate",
        order=50,
        escalate_to=[notified["hook"].public_id],
        escalate_after_seconds=120,
    )
    world = {**notified, "rule": rule, "version": publish(notified["config"])}
    approval = register_gate(world, ttl_seconds=3600)
    [row] = Delivery.objects.filter(approval=approval)
    assert (row.event, row.status) == ("escalated", "pending")
    assert abs((row.next_attempt_at - approval.created_at).total_seconds() - 120) < 1
    _come_due(approval, "escalated")
    deliveries_send_due()
    assert [e["subject"] for e in receiver.events("escalated")] == [approval.public_id]
