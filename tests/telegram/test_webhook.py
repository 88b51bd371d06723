"""POST /integrations/telegram/webhook over real HTTP: the secret header, the fake Bot API on loopback."""

import threading
import time

import pytest
import requests

from approvals.models import ApprovalRequest
from contacts.sending import deliveries_send_due
from tests.asgi import AsgiServer
from tests.factories import make_approval, make_token_cap
from tests.helpers import chat_posted, error_of

from .conftest import (
    ALICE_TG,
    BOB_TG,
    CHARLIE_TG,
    LEADS,
    STRANGER_TG,
    TELEGRAM_ENV,
    post_update,
    press,
    reply,
)

pytestmark = pytest.mark.usefixtures("fake_telegram", "linked")


def status_of(approval) -> str:
    return ApprovalRequest.objects.get(pk=approval.pk).status


def alert(fake) -> dict:
    [answer] = fake.calls_to("answerCallbackQuery")
    return answer


def test_a_linked_reviewer_approves_from_telegram(live_server, fake_telegram, request_for_deletion):
    response = post_update(live_server.url, press(request_for_deletion, "approve", user=BOB_TG))

    assert response.status_code == 200
    approval = ApprovalRequest.objects.get(pk=request_for_deletion.pk)
    assert (approval.status, approval.decision_action, approval.decided_by_email) == (
        "approved",
        "resume",
        "bob@acme.test",
    )
    answer = alert(fake_telegram)
    assert answer["show_alert"] is False  # the spinner stops with a short note, no dialog to dismiss
    assert answer["text"].startswith("Approved by bob@acme.test")


def test_it_refuses_a_forged_secret_and_decides_nothing(live_server, fake_telegram, request_for_deletion):
    response = post_update(live_server.url, press(request_for_deletion, "approve", user=BOB_TG), secret="not-it")

    assert response.status_code == 401
    assert error_of(response)["code"] == "secret_invalid"
    assert status_of(request_for_deletion) == "pending"
    assert fake_telegram.calls == []  # refused before anything else


def test_it_refuses_an_update_without_the_secret_header(live_server, fake_telegram, request_for_deletion):
    response = post_update(live_server.url, press(request_for_deletion, "approve", user=BOB_TG), secret=None)

    assert response.status_code == 401
    assert error_of(response)["code"] == "secret_missing"
    assert status_of(request_for_deletion) == "pending"


def test_the_secret_is_checked_before_the_body_is_read(live_server, fake_telegram):
    response = requests.post(
        f"{live_server.url}/integrations/telegram/webhook",
        data=b"{not json",
        headers={"Content-Type": "application/json", "X-Telegram-Bot-Api-Secret-Token": "wrong"},
        timeout=10,
    )

    assert response.status_code == 401  # not a 400 about the body: nothing of it was looked at


def test_it_accepts_nothing_when_no_secret_is_set(fake_telegram, request_for_deletion):
    with AsgiServer(
        HITL_TELEGRAM_API_URL=fake_telegram.url, **{**TELEGRAM_ENV, "HITL_TELEGRAM_WEBHOOK_SECRET": ""}
    ) as server:
        response = post_update(server.url, press(request_for_deletion, "approve", user=BOB_TG), secret="")

    assert response.status_code == 401
    assert "HITL_TELEGRAM_WEBHOOK_SECRET" in error_of(response)["message"]
    assert status_of(request_for_deletion) == "pending"


def test_a_replayed_update_does_nothing_the_second_time(live_server, fake_telegram, request_for_deletion):
    update = press(request_for_deletion, "reject", user=BOB_TG)

    first = post_update(live_server.url, update)
    replay = post_update(live_server.url, update)

    assert first.status_code == 200
    assert replay.status_code == 200  # acknowledged, so Telegram stops resending it; nothing done
    assert len(fake_telegram.calls_to("sendMessage")) == 1  # one reason prompt, not two
    assert len(fake_telegram.calls_to("answerCallbackQuery")) == 1


def test_a_stale_reason_is_refused(live_server, fake_telegram, request_for_deletion):
    post_update(live_server.url, press(request_for_deletion, "reject", user=BOB_TG))
    [prompt] = fake_telegram.calls_to("sendMessage")
    prompt_id = 100  # the fake's first message id
    ten_minutes_ago = int(time.time()) - 600

    post_update(live_server.url, reply("Legal hold", user=BOB_TG, to_message_id=prompt_id, date=ten_minutes_ago))

    assert status_of(request_for_deletion) == "pending"
    told = fake_telegram.calls_to("sendMessage")[-1]
    assert "too late" in told["text"] and "Nothing was decided" in told["text"]
    assert "Reject" in prompt["text"]


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[1, 2]", b'{"update_id": "7"}', b'{"message": {}}', b"\xff\xfe", b'{"update_id": true}'],
)
def test_a_body_that_is_not_an_update_is_a_400_not_a_500(live_server, fake_telegram, body):
    response = requests.post(
        f"{live_server.url}/integrations/telegram/webhook",
        data=body,
        headers={
            "Content-Type": "application/json",
            "X-Telegram-Bot-Api-Secret-Token": TELEGRAM_ENV["HITL_TELEGRAM_WEBHOOK_SECRET"],
        },
        timeout=10,
    )

    assert response.status_code == 400
    assert error_of(response)["code"] == "bad_update"


def test_odd_updates_are_acknowledged_and_do_nothing(live_server, fake_telegram, request_for_deletion):
    odd = [
        {"update_id": 1, "callback_query": {"id": "x", "data": "somebody-elses-button"}},
        {"update_id": 2, "callback_query": {"id": "y", "data": "hitl:approve:apr_nothere", "from": {"id": BOB_TG}}},
        {"update_id": 3, "callback_query": {"id": "z", "data": f"hitl:approve:{request_for_deletion.public_id}"}},
        {"update_id": 4, "message": {"text": "hi", "chat": {"id": 5, "type": "group"}, "from": {"id": 5}, "date": 1}},
        {"update_id": 5, "edited_message": {}},
        {"update_id": 6, "callback_query": "not an object", "message": [1]},
    ]
    for update in odd:
        assert post_update(live_server.url, update).status_code == 200

    assert status_of(request_for_deletion) == "pending"


def test_an_unknown_telegram_user_is_told_why_and_nothing_is_decided(live_server, fake_telegram, request_for_deletion):
    response = post_update(live_server.url, press(request_for_deletion, "approve", user=STRANGER_TG))

    assert response.status_code == 200
    assert status_of(request_for_deletion) == "pending"
    answer = alert(fake_telegram)
    assert answer["show_alert"] is True
    assert "link it on your account page" in answer["text"]
    assert "Nothing was decided" in answer["text"]


def test_a_member_of_another_workspace_cannot_decide(live_server, fake_telegram, request_for_deletion):
    post_update(live_server.url, press(request_for_deletion, "approve", user=CHARLIE_TG))

    assert status_of(request_for_deletion) == "pending"
    answer = alert(fake_telegram)
    assert answer["show_alert"] is True
    assert "charlie@globex.test is not a reviewer of acme" in answer["text"].lower()


def test_a_deactivated_reviewer_cannot_decide_from_telegram(live_server, fake_telegram, bob, request_for_deletion):
    bob.is_active = False
    bob.save(update_fields=["is_active"])

    post_update(live_server.url, press(request_for_deletion, "approve", user=BOB_TG))

    assert status_of(request_for_deletion) == "pending"
    assert "not a reviewer" in alert(fake_telegram)["text"]


def test_reject_asks_for_a_reason_and_the_reply_reaches_the_agent(
    live_server, fake_telegram, engine_api, request_for_deletion
):
    post_update(live_server.url, press(request_for_deletion, "reject", user=BOB_TG))

    assert status_of(request_for_deletion) == "pending"  # nothing decided until the reason comes
    [prompt] = fake_telegram.calls_to("sendMessage")
    assert prompt["reply_markup"]["force_reply"] is True
    assert f"tg://user?id={BOB_TG}" in prompt["text"]  # the presser is mentioned: the reply box is theirs
    assert prompt["reply_parameters"]["message_id"] == 100  # under the card that was pressed

    post_update(live_server.url, reply("Legal hold on this customer", user=BOB_TG, to_message_id=100))

    seen_by_engine = engine_api.get(f"/api/v1/approvals/{request_for_deletion.public_id}").json()
    assert seen_by_engine["status"] == "rejected"
    assert seen_by_engine["decision"]["action"] == "halt"
    assert seen_by_engine["decision"]["decided_by"] == "bob@acme.test"
    assert seen_by_engine["decision"]["reason"] == "Legal hold on this customer"
    assert seen_by_engine["decision"]["undeliverable"] is False
    assert fake_telegram.calls_to("sendMessage")[-1]["text"].startswith("Rejected by bob@acme.test")


def test_only_the_presser_gives_the_reason(live_server, fake_telegram, request_for_deletion):
    post_update(live_server.url, press(request_for_deletion, "reject", user=BOB_TG))

    post_update(live_server.url, reply("because", user=ALICE_TG, to_message_id=100))

    assert status_of(request_for_deletion) == "pending"
    assert "Only the person who pressed" in fake_telegram.calls_to("sendMessage")[-1]["text"]


def test_a_reason_over_the_limit_is_refused_and_decides_nothing(live_server, fake_telegram, request_for_deletion):
    post_update(live_server.url, press(request_for_deletion, "reject", user=BOB_TG))

    post_update(live_server.url, reply("x" * 2001, user=BOB_TG, to_message_id=100))

    assert status_of(request_for_deletion) == "pending"
    assert "The reason is 2,001 characters; keep it to 2,000" in fake_telegram.calls_to("sendMessage")[-1]["text"]


def test_four_eyes_hold_in_telegram(live_server, fake_telegram, config):
    approval = make_approval(config, requested_by="bob@acme.test")

    post_update(live_server.url, press(approval, "approve", user=BOB_TG))

    assert status_of(approval) == "pending"
    answer = alert(fake_telegram)
    assert answer["show_alert"] is True and "four eyes" in answer["text"]


def test_a_quorum_vote_from_telegram_is_one_vote(live_server, fake_telegram, config):
    approval = make_approval(config, approvals_required=2)

    post_update(live_server.url, press(approval, "approve", user=BOB_TG))
    assert status_of(approval) == "pending"
    post_update(live_server.url, press(approval, "approve", user=BOB_TG))  # again: still one vote
    assert status_of(approval) == "pending"
    post_update(live_server.url, press(approval, "approve", user=ALICE_TG))

    assert status_of(approval) == "approved"


def test_a_token_cap_is_decided_with_its_own_buttons(live_server, fake_telegram, config):
    breach = make_token_cap(config)

    post_update(live_server.url, press(breach, "approve", user=BOB_TG))
    assert status_of(breach) == "pending"
    assert "proceed or stop" in fake_telegram.calls_to("answerCallbackQuery")[0]["text"]

    post_update(live_server.url, press(breach, "proceed", user=BOB_TG))
    approval = ApprovalRequest.objects.get(pk=breach.pk)
    assert (approval.status, approval.decision_action) == ("approved", "proceed_past_cap")


def test_pressing_a_request_decided_elsewhere_tells_the_first_decision(
    live_server, fake_telegram, alice_api, request_for_deletion
):
    alice_api.post(f"/api/v1/approvals/{request_for_deletion.public_id}/decision", json={"decision": "approve"})

    post_update(live_server.url, press(request_for_deletion, "reject", user=BOB_TG))

    assert status_of(request_for_deletion) == "approved"
    assert fake_telegram.calls_to("sendMessage") == []  # no reason asked for a decided request
    assert alert(fake_telegram)["text"].startswith("Already approved by alice@acme.test at ")


def test_two_presses_at_once_make_one_decision_and_both_messages_agree(live_server, fake_telegram, telegram_world):
    approval, messages = chat_posted(telegram_world, to_both=True)
    assert set(messages) == {TELEGRAM_ENV["HITL_ACME_TELEGRAM_APPROVERS"], LEADS}
    fake_telegram.reset()
    start = threading.Barrier(2)
    answers = {}

    def presses(name, user, decision, chat):
        update = press(approval, decision, user=user, chat=chat, message_id=messages[chat].message_id)
        start.wait()
        answers[name] = post_update(live_server.url, update)

    threads = [
        threading.Thread(target=presses, args=("bob", BOB_TG, "approve", TELEGRAM_ENV["HITL_ACME_TELEGRAM_APPROVERS"])),
        threading.Thread(target=presses, args=("alice", ALICE_TG, "approve", LEADS)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert {answer.status_code for answer in answers.values()} == {200}
    approval.refresh_from_db()
    assert approval.status == "approved"
    texts = sorted(answer["text"] for answer in fake_telegram.calls_to("answerCallbackQuery"))
    winner = approval.decided_by_email
    assert texts[0].startswith(f"Already approved by {winner}")  # the one who lost is told the first decision
    assert texts[1].startswith(f"Approved by {winner}")

    deliveries_send_due()  # what the cluster runs once the decision commits

    edits = fake_telegram.calls_to("editMessageText")
    assert sorted((edit["chat_id"], edit["message_id"]) for edit in edits) == sorted(
        (chat, message.message_id) for chat, message in messages.items()
    )
    assert edits[0]["text"] == edits[1]["text"] and f"Approved by {winner}" in edits[0]["text"]
    assert all(edit["reply_markup"] == {"inline_keyboard": []} for edit in edits)  # buttons gone


def test_an_oversized_body_is_refused_with_413(live_server, fake_telegram):
    response = post_update(live_server.url, {"update_id": 1, "pad": "x" * (300 * 1024)})

    assert response.status_code == 413


def test_the_openapi_schema_describes_the_endpoint(live_server, fake_telegram):
    schema = requests.get(f"{live_server.url}/api/schema/", params={"format": "json"}, timeout=30).json()
    operation = schema["paths"]["/integrations/telegram/webhook"]["post"]

    assert {"200", "400", "401", "413"} <= set(operation["responses"])


def test_a_press_costs_three_queries_more_than_the_decision_itself(fake_telegram, bob, config, request_for_deletion):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from approvals.review.decide import approval_decide
    from integrations.telegram_inbound import telegram_update

    with CaptureQueriesContext(connection) as deciding:
        approval_decide(approval=make_approval(config), user=bob, decision="approve")
    with CaptureQueriesContext(connection) as pressing:
        telegram_update(update=press(request_for_deletion, "approve", user=BOB_TG))

    assert status_of(request_for_deletion) == "approved"
    # which request, whose Telegram account, whether they review the workspace — then the one decide service
    assert len(pressing) <= len(deciding) + 3, [query["sql"] for query in pressing.captured_queries]
