"""What each notification event does to a Slack contact's channel (slack_deliver, the transport's body)."""

from datetime import timedelta

import pytest

from approvals.expiry.expire import approval_sweep_overdue
from approvals.review.decide import approval_decide
from integrations.models import SlackMessage
from integrations.outbound import slack_deliver
from tests.factories import make_approval
from tests.helpers import travel

from .conftest import CHANNEL, CHANNEL_REF

pytestmark = pytest.mark.usefixtures("fake_slack")


def deliver(approval, event: str, channel_ref: str = CHANNEL_REF) -> None:
    slack_deliver(approval=approval, event=event, channel_ref=channel_ref, contact_id="con_oncall")


def has_buttons(sent: dict) -> bool:
    return any(block["type"] == "actions" for block in sent.get("blocks") or [])


def test_requested_posts_the_message_with_buttons_and_remembers_it(fake_slack, request_for_deletion):
    deliver(request_for_deletion, "requested")

    [sent] = fake_slack.calls_to("chat.postMessage")
    assert has_buttons(sent)
    message = SlackMessage.objects.get()
    assert (message.channel, message.contact_id, message.shown_status) == (CHANNEL, "con_oncall", "pending")


def test_a_reminder_is_a_reply_in_the_requests_thread(fake_slack, request_for_deletion):
    deliver(request_for_deletion, "requested")
    deliver(request_for_deletion, "reminder")

    first, reminder = fake_slack.calls_to("chat.postMessage")
    assert reminder["thread_ts"] == "1764480000.000001"
    assert reminder["text"].startswith("Reminder — still waiting: Delete customer T-4821, expires ")
    assert not has_buttons(reminder)
    assert SlackMessage.objects.count() == 1


def test_an_escalation_to_another_channel_posts_the_message_there_with_buttons(
    fake_slack, monkeypatch, request_for_deletion
):
    monkeypatch.setenv("HITL_ACME_SLACK_LEADS", "C0LEADS")
    deliver(request_for_deletion, "requested")

    deliver(request_for_deletion, "escalated", channel_ref="${HITL_ACME_SLACK_LEADS}")

    escalated = fake_slack.calls_to("chat.postMessage")[-1]
    assert escalated["channel"] == "C0LEADS" and has_buttons(escalated)
    assert sorted(SlackMessage.objects.values_list("channel", flat=True)) == ["C0APPROVERS", "C0LEADS"]


def test_decided_updates_the_message_in_place(fake_slack, bob, request_for_deletion):
    deliver(request_for_deletion, "requested")
    approval_decide(approval=request_for_deletion, user=bob, decision="approve")

    deliver(request_for_deletion, "decided")

    [update] = fake_slack.calls_to("chat.update")
    assert update["ts"] == "1764480000.000001" and not has_buttons(update)
    assert len(fake_slack.calls_to("chat.postMessage")) == 1


def test_expired_updates_the_message_to_say_nobody_answered(fake_slack, config):
    approval = make_approval(config, ttl=timedelta(minutes=1))
    deliver(approval, "requested")

    with travel(timedelta(minutes=2)):
        approval_sweep_overdue()
        deliver(approval, "expired")

    [update] = fake_slack.calls_to("chat.update")
    assert "Expired — nobody answered" in str(update["blocks"])


def test_a_request_resolved_before_its_first_message_is_posted_without_buttons(fake_slack, bob, request_for_deletion):
    approval_decide(approval=request_for_deletion, user=bob, decision="approve")

    deliver(request_for_deletion, "requested")

    [sent] = fake_slack.calls_to("chat.postMessage")
    assert not has_buttons(sent) and "Approved by bob@acme.test" in str(sent["blocks"])
    assert SlackMessage.objects.get().shown_status == "approved"


def test_a_test_event_says_the_contact_reaches_the_channel(fake_slack):
    deliver(None, "test")

    [sent] = fake_slack.calls_to("chat.postMessage")
    assert sent["channel"] == CHANNEL
    assert sent["text"].startswith("Test message from the HITL Portal")


def test_a_digest_lists_each_request_as_a_link_to_its_page(fake_slack):
    from integrations.outbound import slack_digest

    items = [
        {"subject": f"Approve: Delete customer T-{n}?", "review_url": f"https://portal.example/hitl/approvals/apr_{n}/"}
        for n in range(7)
    ]

    slack_digest(channel_ref=CHANNEL_REF, subject="7 more requests wait for approval", items=items)

    [sent] = fake_slack.calls_to("chat.postMessage")
    assert sent["text"] == "7 more requests wait for approval"
    shown = "\n".join(block["text"]["text"] for block in sent["blocks"])
    assert "• <https://portal.example/hitl/approvals/apr_6/|Approve: Delete customer T-6?>" in shown
    assert not has_buttons(sent)
