"""The Telegram transport in the notification outbox: what the cluster's sender does for a Telegram contact."""

from contextlib import nullcontext
from datetime import timedelta

import pytest
from django.utils import timezone

from approvals.expiry.expire import approval_sweep_overdue
from approvals.review.decide import approval_decide
from contacts.models import Delivery
from contacts.outbox import delivery_test_create
from contacts.sending import deliveries_send_due
from integrations.models import TelegramMessage
from tests.helpers import register_gate, travel
from tests.loopback import wait_for

from .conftest import CHAT

# The outbox sends on threads with connections of their own: they must see what the test committed.
pytestmark = [pytest.mark.usefixtures("fake_telegram"), pytest.mark.django_db(transaction=True)]


def delivery(approval, event: str) -> Delivery:
    return Delivery.objects.get(approval=approval, event=event)


def buttons(sent: dict) -> list[tuple[str, str]]:
    return [(b["text"], b["callback_data"]) for row in sent["reply_markup"]["inline_keyboard"] for b in row]


def test_a_registration_posts_the_card_with_its_buttons(fake_telegram, telegram_world):
    approval = register_gate(telegram_world)

    deliveries_send_due()

    [sent] = fake_telegram.calls_to("sendMessage")
    assert sent["chat_id"] == CHAT
    assert sent["parse_mode"] == "HTML"
    assert sent["text"].startswith("<b>Delete customer T-4821</b>")
    assert "<blockquote>Deleting a customer is final.</blockquote>" in sent["text"]
    assert "<b>Caller:</b> support-bot" in sent["text"]
    assert f'<a href="https://portal.example/hitl/approvals/{approval.public_id}/">Open in portal</a>' in sent["text"]
    assert buttons(sent) == [
        ("Reject", f"hitl:reject:{approval.public_id}"),
        ("Approve", f"hitl:approve:{approval.public_id}"),
        ("I’m on it", f"hitl:claim:{approval.public_id}"),  # a row of its own: a claim, never a decision
    ]
    assert len(sent["reply_markup"]["inline_keyboard"]) == 2
    row = delivery(approval, "requested")
    assert (row.status, row.attempts, row.last_error) == ("sent", 1, "")
    message = TelegramMessage.objects.get(approval=approval)
    assert (message.chat_id, message.message_id, message.contact_id) == (
        CHAT,
        100,
        telegram_world["contact"].public_id,
    )


def test_engine_text_is_escaped_for_telegrams_html_and_made_visible(fake_telegram, telegram_world):
    register_gate(telegram_world, target="<b>all</b> & <a href='x'>customers</a>\u202e", summary="1 < 2 & 3 > 2")

    deliveries_send_due()

    [sent] = fake_telegram.calls_to("sendMessage")
    assert "&lt;b&gt;all&lt;/b&gt; &amp; &lt;a href='x'&gt;customers&lt;/a&gt;\\u202e" in sent["text"]
    assert "1 &lt; 2 &amp; 3 &gt; 2" in sent["text"]
    assert "<a href='x'>" not in sent["text"]


def test_a_token_cap_card_offers_proceed_and_stop(fake_telegram, telegram_world):
    from approvals.models import ApprovalRequest
    from integrations.telegram_outbound import telegram_deliver
    from tests.factories import make_token_cap

    breach = make_token_cap(telegram_world["config"])
    telegram_deliver(
        approval=ApprovalRequest.objects.get(pk=breach.pk),
        event="requested",
        channel_ref="${HITL_ACME_TELEGRAM_APPROVERS}",
    )

    [sent] = fake_telegram.calls_to("sendMessage")
    assert [text for text, _ in buttons(sent)] == ["Stop the run", "Proceed past cap", "I’m on it"]
    assert "<b>Tokens used:</b> 51,200 of 50,000" in sent["text"]


def test_a_decision_made_anywhere_edits_the_message(fake_telegram, telegram_world, alice):
    approval = register_gate(telegram_world)
    deliveries_send_due()

    approval_decide(approval=approval, user=alice, decision="reject", reason="Legal <hold>")  # the tab, API, CLI…
    deliveries_send_due()

    [edit] = fake_telegram.calls_to("editMessageText")
    assert (edit["chat_id"], edit["message_id"]) == (CHAT, 100)
    assert edit["reply_markup"] == {"inline_keyboard": []}
    assert "<b>Rejected by alice@acme.test at " in edit["text"]
    assert "Reason: Legal &lt;hold&gt;" in edit["text"]
    assert delivery(approval, "decided").status == "sent"
    assert len(fake_telegram.calls_to("sendMessage")) == 1  # edited in place, no second message
    assert TelegramMessage.objects.get(approval=approval).shown_status == "rejected"


def test_an_expiry_edits_the_message_to_say_nobody_answered(fake_telegram, telegram_world):
    approval = register_gate(telegram_world, ttl_seconds=600)
    deliveries_send_due()

    with travel(timedelta(minutes=11)):
        approval_sweep_overdue()
        deliveries_send_due()

    [edit] = fake_telegram.calls_to("editMessageText")
    assert "Expired — nobody answered" in edit["text"]
    assert delivery(approval, "expired").status == "sent"


def test_telegrams_429_retry_after_is_honoured_by_the_outbox(fake_telegram, telegram_world):
    approval = register_gate(telegram_world)
    fake_telegram.throttle("sendMessage", retry_after=900)
    before = timezone.now()

    deliveries_send_due()

    row = delivery(approval, "requested")
    assert row.status == "pending" and row.attempts == 1
    assert row.last_error == "Telegram rate-limited sendMessage (retry after 900 s)"
    assert row.next_attempt_at >= before + timedelta(seconds=900)
    with travel(timedelta(minutes=19)):
        deliveries_send_due()
    assert delivery(approval, "requested").status == "sent"


def test_a_chat_the_bot_cannot_write_to_fails_for_good(fake_telegram, telegram_world):
    approval = register_gate(telegram_world)
    fake_telegram.fail("sendMessage", 400, "Bad Request: chat not found")

    deliveries_send_due()

    row = delivery(approval, "requested")
    assert (row.status, row.last_error) == ("failed", "Telegram refused sendMessage: Bad Request: chat not found")


def test_an_unset_chat_variable_fails_at_once_naming_it(fake_telegram, telegram_world, monkeypatch):
    monkeypatch.delenv("HITL_ACME_TELEGRAM_APPROVERS")
    approval = register_gate(telegram_world)

    deliveries_send_due()

    row = delivery(approval, "requested")
    assert (row.status, row.last_error) == ("failed", "HITL_ACME_TELEGRAM_APPROVERS is not set")
    assert fake_telegram.calls == []


def test_the_bot_token_never_appears_in_a_failure(fake_telegram, telegram_world, settings):
    settings.HITL_TELEGRAM_API_URL = "http://127.0.0.1:1"  # nothing listens: the connection is refused
    approval = register_gate(telegram_world)

    deliveries_send_due()

    row = delivery(approval, "requested")
    assert row.last_error == "Telegram sendMessage failed: ConnectionError"
    assert settings.HITL_TELEGRAM_BOT_TOKEN not in row.last_error


def test_send_test_reaches_the_chat(fake_telegram, telegram_world):
    row = delivery_test_create(contact=telegram_world["contact"])

    deliveries_send_due()

    [sent] = fake_telegram.calls_to("sendMessage")
    assert sent["chat_id"] == CHAT and sent["text"].startswith("Test message from the HITL Portal")
    row.refresh_from_db()
    assert row.status == "sent"


@pytest.mark.parametrize("in_a_batch", [False, True])
def test_a_reminder_replies_to_the_card_and_an_escalation_elsewhere_posts_it_there(
    fake_telegram, telegram_world, in_a_batch
):
    from approvals.models import ApprovalRequest
    from contacts.batch import batch_scope
    from integrations.telegram_outbound import telegram_deliver

    approval = ApprovalRequest.objects.select_related("config").get(pk=register_gate(telegram_world).pk)
    # In a batch the card is looked for among the batch's requests' messages, read once before the
    # card is posted: the reminder finds it because posting it added it there.
    with batch_scope(requests={approval.pk}) if in_a_batch else nullcontext():
        telegram_deliver(approval=approval, event="requested", channel_ref="${HITL_ACME_TELEGRAM_APPROVERS}")
        telegram_deliver(approval=approval, event="reminder", channel_ref="${HITL_ACME_TELEGRAM_APPROVERS}")
        telegram_deliver(approval=approval, event="escalated", channel_ref="${HITL_ACME_TELEGRAM_LEADS}")

    card, reminder, escalated = fake_telegram.calls_to("sendMessage")
    assert reminder["reply_parameters"]["message_id"] == 100
    assert reminder["text"].startswith("Reminder — still waiting: Delete customer T-4821, expires ")
    assert "reply_markup" not in reminder  # one set of buttons per chat
    assert escalated["chat_id"] == "-1009876543210" and buttons(escalated) == buttons(card)
    assert TelegramMessage.objects.filter(approval=approval).count() == 2


def test_the_send_threads_hand_back_their_database_connections_when_the_run_ends(fake_telegram, telegram_world):
    from django.db import connection

    def backends() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
            return cursor.fetchone()[0]

    before = backends()
    for _ in range(3):
        register_gate(telegram_world)

    assert deliveries_send_due() == 3

    assert len(fake_telegram.calls_to("sendMessage")) == 3
    # The threads' connections, used for three sends, are closed again (the kicker's, which enqueued
    # the task after each registration, closes by itself a moment later).
    wait_for(lambda: backends() == before, timeout=5, what=lambda: f"{backends()} connections, not {before}")
