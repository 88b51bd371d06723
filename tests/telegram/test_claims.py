""" "I'm on it" on a request's Telegram message: presses posted to the webhook over real HTTP, the fake Bot API
on loopback. The claim goes through collaboration's one claim service; every chat's message names the
claimant once the cluster refreshes them (run here with run_queued, as the cluster would)."""

import pytest

from approvals.models import ApprovalRequest
from collaboration.models import Claim
from contacts.sending import deliveries_send_due
from integrations.chat_claims import TASK
from integrations.models import TelegramMessage
from tests.factories import make_approval
from tests.helpers import chat_posted, make_config, run_queued

from .conftest import ALICE_TG, BOB_TG, CHARLIE_TG, LEADS, STRANGER_TG, TELEGRAM_ENV, post_update, press

pytestmark = pytest.mark.usefixtures("fake_telegram", "linked")

CHAT = TELEGRAM_ENV["HITL_ACME_TELEGRAM_APPROVERS"]


@pytest.fixture
def posted(telegram_world):
    """A request the outbox posted to the approvers' and the leads' chats: (the request, {chat: its message})."""
    return chat_posted(telegram_world, to_both=True)


def claim_press(live_server, approval, *, user: int, chat: str = CHAT, messages: dict):
    response = post_update(
        live_server.url, press(approval, "claim", user=user, chat=chat, message_id=messages[chat].message_id)
    )
    assert response.status_code == 200, response.text


def labels(call: dict) -> list[str]:
    return [button["text"] for row in call["reply_markup"]["inline_keyboard"] for button in row]


def test_im_on_it_claims_and_every_chats_message_names_the_claimant(live_server, fake_telegram, posted):
    approval, messages = posted
    fake_telegram.reset()

    claim_press(live_server, approval, user=BOB_TG, messages=messages)

    [answer] = fake_telegram.calls_to("answerCallbackQuery")
    assert answer["show_alert"] is False and answer["text"].startswith("You are on it")
    assert Claim.objects.get(approval=approval).user_email == "bob@acme.test"
    assert run_queued(TASK) == [2]
    edits = fake_telegram.calls_to("editMessageText")
    assert sorted(edit["chat_id"] for edit in edits) == sorted(messages)
    for edit in edits:
        assert "<b>Claimed by bob@acme.test</b>" in edit["text"]
        assert labels(edit) == ["Reject", "Approve"]  # the decision's buttons stay; the claim's is gone
    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"


def test_a_press_on_someone_elses_claim_is_told_who_and_changes_nothing(live_server, fake_telegram, posted):
    approval, messages = posted
    claim_press(live_server, approval, user=BOB_TG, messages=messages)
    run_queued(TASK)
    fake_telegram.reset()

    claim_press(live_server, approval, user=ALICE_TG, chat=LEADS, messages=messages)

    [answer] = fake_telegram.calls_to("answerCallbackQuery")
    assert answer["show_alert"] is True and answer["text"].startswith("bob@acme.test is on it already")
    assert Claim.objects.get(approval=approval).user_email == "bob@acme.test"
    assert run_queued(TASK) == []


def test_a_claim_never_stops_another_deciding_and_the_decided_message_has_no_claim(live_server, fake_telegram, posted):
    approval, messages = posted
    claim_press(live_server, approval, user=BOB_TG, messages=messages)
    run_queued(TASK)
    fake_telegram.reset()

    post_update(live_server.url, press(approval, "approve", user=ALICE_TG, message_id=messages[CHAT].message_id))
    deliveries_send_due()

    assert ApprovalRequest.objects.get(pk=approval.pk).decided_by_email == "alice@acme.test"
    for edit in fake_telegram.calls_to("editMessageText"):
        assert edit["reply_markup"] == {"inline_keyboard": []}
        assert "Claimed by" not in edit["text"]


@pytest.mark.parametrize(
    ("user", "why"),
    [(CHARLIE_TG, "charlie@globex.test is not a reviewer of acme"), (STRANGER_TG, "does not know this telegram")],
)
def test_someone_who_may_not_review_it_is_refused_as_the_decide_buttons_refuse(
    live_server, fake_telegram, posted, user, why
):
    approval, messages = posted
    fake_telegram.reset()

    claim_press(live_server, approval, user=user, messages=messages)

    [answer] = fake_telegram.calls_to("answerCallbackQuery")
    assert answer["show_alert"] is True and why in answer["text"].lower()
    assert not Claim.objects.exists()
    assert run_queued(TASK) == []


def test_a_telegram_user_of_workspace_a_cannot_claim_workspace_bs_request(live_server, fake_telegram, globex):
    globex_request = make_approval(make_config(globex, "Globex agent"))
    message = TelegramMessage.objects.create(approval=globex_request, chat_id=CHAT, message_id=4242)

    claim_press(live_server, globex_request, user=BOB_TG, messages={CHAT: message})

    [answer] = fake_telegram.calls_to("answerCallbackQuery")
    assert "bob@acme.test is not a reviewer of globex" in answer["text"].lower()
    assert not Claim.objects.exists()
