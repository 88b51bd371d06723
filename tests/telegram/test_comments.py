"""A reply to a request's Telegram message is the linked member's comment on it (docs/collaboration.md).

The card is sent by the outbox to the fake Bot API on loopback, so the message id replied to is the one
Telegram gave; the updates go to the real webhook over HTTP with the secret header.
"""

import pytest

from approvals.models import ApprovalRequest
from audit.models import AuditRecord
from collaboration.models import Comment
from integrations.models import TelegramMessage, TelegramReasonPrompt
from tests.factories import make_approval
from tests.helpers import chat_posted, comments_via_api, make_config

from .conftest import ALICE_TG, BOB_TG, CHARLIE_TG, CHAT, STRANGER_TG, post_update, press, reply

pytestmark = pytest.mark.usefixtures("fake_telegram", "linked")


@pytest.fixture
def card(telegram_world):
    """A request whose card the outbox sent to the approvers' chat: (the request, its Telegram message)."""
    approval, messages = chat_posted(telegram_world, target="customer T-4821")
    return approval, messages[CHAT]


def test_a_reviewers_reply_to_the_card_is_their_comment_and_decides_nothing(
    live_server, fake_telegram, alice_api, card
):
    approval, message = card
    sent_before = len(fake_telegram.calls_to("sendMessage"))

    response = post_update(
        live_server.url, reply("Is this the customer from ticket 991?", user=BOB_TG, to_message_id=message.message_id)
    )

    assert response.status_code == 200
    [comment] = comments_via_api(alice_api, approval)
    assert (comment["author"], comment["via"], comment["text"]) == (
        "bob@acme.test",
        "telegram",
        "Is this the customer from ticket 991?",
    )
    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"
    record = AuditRecord.objects.get(action="approval.commented", object=approval.public_id)
    assert (record.actor, record.data["via"], record.data["comment_id"]) == ("bob@acme.test", "telegram", comment["id"])
    assert len(fake_telegram.calls_to("sendMessage")) == sent_before  # the reply itself is there to read


def test_an_update_telegram_sends_again_adds_the_comment_once(live_server, alice_api, card):
    approval, message = card
    update = reply("Once.", user=BOB_TG, to_message_id=message.message_id)

    assert post_update(live_server.url, update).status_code == 200
    assert post_update(live_server.url, update).status_code == 200

    assert [c["text"] for c in comments_via_api(alice_api, approval)] == ["Once."]


def test_an_unlinked_telegram_user_adds_nothing_and_is_told_how_to_link(live_server, fake_telegram, card):
    approval, message = card

    post_update(live_server.url, reply("me too", user=STRANGER_TG, to_message_id=message.message_id))

    assert not Comment.objects.filter(approval=approval).exists()
    told = fake_telegram.calls_to("sendMessage")[-1]
    assert f"not added as a comment on {approval.public_id}" in told["text"]
    assert "link it on your account page" in told["text"]


def test_a_member_of_another_workspace_cannot_comment_on_a_card_they_can_read(live_server, fake_telegram, globex, card):
    acme_request, message = card
    globex_request = make_approval(make_config(globex, "Globex agent"))
    TelegramMessage.objects.create(approval=globex_request, chat_id=CHAT, message_id=message.message_id + 1000)

    post_update(live_server.url, reply("globex here", user=CHARLIE_TG, to_message_id=message.message_id))
    post_update(live_server.url, reply("acme here", user=BOB_TG, to_message_id=message.message_id + 1000))

    assert not Comment.objects.exists()
    texts = [call["text"] for call in fake_telegram.calls_to("sendMessage")[-2:]]
    assert "charlie@globex.test is not a reviewer of acme" in texts[0].lower()
    assert "bob@acme.test is not a reviewer of globex" in texts[1].lower()


def test_a_bots_reply_and_a_reply_to_another_message_add_nothing(live_server, card):
    approval, message = card
    bots = reply("automated", user=ALICE_TG, to_message_id=message.message_id)
    bots["message"]["from"]["is_bot"] = True

    post_update(live_server.url, bots)
    post_update(live_server.url, reply("off topic", user=ALICE_TG, to_message_id=message.message_id + 7))

    assert not Comment.objects.filter(approval=approval).exists()


def test_a_reply_to_the_reason_prompt_still_decides_and_a_reply_to_the_card_still_comments(
    live_server, fake_telegram, alice_api, card
):
    approval, message = card
    post_update(live_server.url, press(approval, "reject", user=BOB_TG, message_id=message.message_id))
    prompt = fake_telegram.calls_to("sendMessage")[-1]
    assert prompt["reply_markup"]["force_reply"] is True
    prompt_id = TelegramReasonPrompt.objects.get(approval=approval).message_id  # the bot's "reply with your reason"

    post_update(live_server.url, reply("Wait, which ticket?", user=ALICE_TG, to_message_id=message.message_id))
    post_update(live_server.url, reply("Legal hold on this customer", user=BOB_TG, to_message_id=prompt_id))

    seen = alice_api.get(f"/api/v1/approvals/{approval.public_id}").json()
    assert seen["status"] == "rejected"
    assert seen["decision"]["reason"] == "Legal hold on this customer"
    assert [(c["author"], c["text"]) for c in comments_via_api(alice_api, approval)] == [
        ("alice@acme.test", "Wait, which ticket?")
    ]


def test_a_reply_over_the_comment_limit_adds_nothing_and_says_why(live_server, fake_telegram, card):
    approval, message = card

    post_update(live_server.url, reply("x" * 2001, user=BOB_TG, to_message_id=message.message_id))

    assert not Comment.objects.filter(approval=approval).exists()
    assert "keep it to 2,000" in fake_telegram.calls_to("sendMessage")[-1]["text"]
