"""POST /integrations/slack/interactions over real HTTP: signed payloads, the fake Slack API on loopback."""

import threading
import time

import pytest
import requests

from approvals.models import ApprovalRequest
from contacts.sending import deliveries_send_due
from integrations.models import SlackMessage
from tests.asgi import AsgiServer
from tests.factories import make_token_cap
from tests.helpers import chat_posted, error_of

from .conftest import (
    ALICE_SLACK,
    BOB_SLACK,
    CHANNEL,
    CHARLIE_SLACK,
    SLACK_ENV,
    click,
    form,
    post_signed,
    sign,
    submit_reason,
)

pytestmark = pytest.mark.usefixtures("fake_slack")


def status_of(approval) -> str:
    return ApprovalRequest.objects.get(pk=approval.pk).status


def test_a_reviewer_approves_from_slack_as_the_member_slack_says_they_are(
    live_server, fake_slack, request_for_deletion
):
    response = post_signed(live_server.url, click(request_for_deletion, "approve", slack_user=BOB_SLACK))

    assert response.status_code == 200
    approval = ApprovalRequest.objects.get(pk=request_for_deletion.pk)
    assert approval.status == "approved"
    assert approval.decision_action == "resume"
    assert approval.decided_by_email == "bob@acme.test"
    assert fake_slack.calls_to("users.info") == [{"user": BOB_SLACK}]
    assert fake_slack.calls_to("chat.postEphemeral") == []  # nothing to explain to the one who decided


def test_slack_emails_match_portal_members_regardless_of_case(live_server, fake_slack, request_for_deletion):
    post_signed(live_server.url, click(request_for_deletion, "approve", slack_user=ALICE_SLACK))

    assert ApprovalRequest.objects.get(pk=request_for_deletion.pk).decided_by_email == "alice@acme.test"


def test_it_refuses_a_forged_signature_and_decides_nothing(live_server, fake_slack, request_for_deletion):
    response = post_signed(
        live_server.url, click(request_for_deletion, "approve", slack_user=BOB_SLACK), secret="not-the-secret"
    )

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "signature_invalid"
    assert status_of(request_for_deletion) == "pending"
    assert fake_slack.calls == []  # refused before anything else, Slack not even asked who it is


def test_it_refuses_a_body_changed_after_signing(live_server, fake_slack, request_for_deletion):
    signed_for = form(click(request_for_deletion, "reject", slack_user=BOB_SLACK))
    tampered = form(click(request_for_deletion, "approve", slack_user=BOB_SLACK))

    response = requests.post(
        f"{live_server.url}/integrations/slack/interactions", data=tampered, headers=sign(signed_for), timeout=10
    )

    assert response.status_code == 401
    assert status_of(request_for_deletion) == "pending"


def test_it_refuses_a_stale_signature(live_server, fake_slack, request_for_deletion):
    six_minutes_ago = int(time.time()) - 6 * 60

    response = post_signed(
        live_server.url, click(request_for_deletion, "approve", slack_user=BOB_SLACK), timestamp=six_minutes_ago
    )

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "signature_stale"
    assert status_of(request_for_deletion) == "pending"
    assert fake_slack.calls == []


def test_it_refuses_a_replayed_request(live_server, fake_slack, request_for_deletion):
    body = form(click(request_for_deletion, "reject", slack_user=BOB_SLACK))
    headers = sign(body)
    url = f"{live_server.url}/integrations/slack/interactions"

    first = requests.post(url, data=body, headers=headers, timeout=10)
    replay = requests.post(url, data=body, headers=headers, timeout=10)

    assert first.status_code == 200
    assert replay.status_code == 401
    assert replay.json()["error"]["code"] == "signature_replayed"
    assert len(fake_slack.calls_to("views.open")) == 1  # the replay did nothing at all


def test_it_refuses_a_request_without_slack_headers(live_server, fake_slack, request_for_deletion):
    body = form(click(request_for_deletion, "approve", slack_user=BOB_SLACK))

    response = requests.post(
        f"{live_server.url}/integrations/slack/interactions",
        data=body,
        headers={"Content-Type": "application/x-www-form-urlencoded"},
        timeout=10,
    )

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "signature_missing"


def test_it_accepts_nothing_when_no_signing_secret_is_set(fake_slack, request_for_deletion):
    unsigned_env = {**SLACK_ENV, "HITL_SLACK_SIGNING_SECRET": ""}
    with AsgiServer(HITL_SLACK_API_URL=fake_slack.url, **unsigned_env) as server:
        response = post_signed(server.url, click(request_for_deletion, "approve", slack_user=BOB_SLACK))

    assert response.status_code == 401
    assert "HITL_SLACK_SIGNING_SECRET" in response.json()["error"]["message"]
    assert status_of(request_for_deletion) == "pending"


@pytest.mark.parametrize(
    "body",
    ["payload=not-json", "payload=%5B1%2C2%5D", "nothing=here", "payload=%7B%22type%22%3A", "%ff%fe=1"],
)
def test_a_signed_body_without_a_json_payload_is_a_400_not_a_500(live_server, fake_slack, body):
    response = requests.post(
        f"{live_server.url}/integrations/slack/interactions", data=body, headers=sign(body), timeout=10
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "bad_payload"


def test_an_unknown_slack_user_is_told_why_and_nothing_is_decided(live_server, fake_slack, request_for_deletion):
    response = post_signed(live_server.url, click(request_for_deletion, "approve", slack_user="U0STRANGER"))

    assert response.status_code == 200
    assert status_of(request_for_deletion) == "pending"
    [ephemeral] = fake_slack.calls_to("chat.postEphemeral")
    assert ephemeral["user"] == "U0STRANGER"
    assert ephemeral["channel"] == CHANNEL
    assert "cannot tell which member you are" in ephemeral["text"]
    assert "Nothing was decided" in ephemeral["text"]


def test_a_slack_user_without_an_email_is_told_why(live_server, fake_slack, request_for_deletion):
    fake_slack.add_user("U0NOEMAIL", None)

    post_signed(live_server.url, click(request_for_deletion, "approve", slack_user="U0NOEMAIL"))

    assert status_of(request_for_deletion) == "pending"
    [ephemeral] = fake_slack.calls_to("chat.postEphemeral")
    assert "no email address" in ephemeral["text"]


def test_being_in_the_channel_is_not_permission_to_decide(live_server, fake_slack, request_for_deletion):
    # charlie reads the channel and has a portal account, but only in globex.
    response = post_signed(live_server.url, click(request_for_deletion, "approve", slack_user=CHARLIE_SLACK))

    assert response.status_code == 200
    assert status_of(request_for_deletion) == "pending"
    [ephemeral] = fake_slack.calls_to("chat.postEphemeral")
    assert ephemeral["user"] == CHARLIE_SLACK
    assert "charlie@globex.test is not a reviewer of acme" in ephemeral["text"].lower()
    assert "Nothing was decided" in ephemeral["text"]


def test_a_deactivated_reviewer_cannot_decide_from_slack(live_server, fake_slack, bob, request_for_deletion):
    bob.is_active = False
    bob.save(update_fields=["is_active"])

    post_signed(live_server.url, click(request_for_deletion, "approve", slack_user=BOB_SLACK))

    assert status_of(request_for_deletion) == "pending"
    assert "not a reviewer" in fake_slack.calls_to("chat.postEphemeral")[0]["text"]


def test_reject_opens_a_modal_and_its_reason_reaches_the_agent(
    live_server, fake_slack, engine_api, request_for_deletion
):
    response = post_signed(live_server.url, click(request_for_deletion, "reject", slack_user=BOB_SLACK))

    assert response.status_code == 200
    assert status_of(request_for_deletion) == "pending"  # nothing decided until the reason is submitted
    [opened] = fake_slack.calls_to("views.open")
    assert opened["trigger_id"] == f"trigger-{BOB_SLACK}-reject"
    assert opened["view"]["title"]["text"] == "Reject"

    submitted = post_signed(
        live_server.url, submit_reason(opened["view"], "Legal hold on this customer", slack_user=BOB_SLACK)
    )

    assert submitted.status_code == 200
    assert submitted.json() == {"response_action": "clear"}
    seen_by_engine = engine_api.get(f"/api/v1/approvals/{request_for_deletion.public_id}").json()
    assert seen_by_engine["status"] == "rejected"
    assert seen_by_engine["decision"]["action"] == "halt"
    assert seen_by_engine["decision"]["decided_by"] == "bob@acme.test"
    assert seen_by_engine["decision"]["reason"] == "Legal hold on this customer"


def test_a_non_reviewer_never_gets_the_reason_modal(live_server, fake_slack, request_for_deletion):
    post_signed(live_server.url, click(request_for_deletion, "reject", slack_user=CHARLIE_SLACK))

    assert fake_slack.calls_to("views.open") == []
    assert "not a reviewer" in fake_slack.calls_to("chat.postEphemeral")[0]["text"]


def test_a_modal_submitted_by_someone_who_may_not_decide_says_why_in_the_modal(
    live_server, fake_slack, request_for_deletion
):
    post_signed(live_server.url, click(request_for_deletion, "reject", slack_user=BOB_SLACK))
    [opened] = fake_slack.calls_to("views.open")

    # The same view submitted as charlie (say bob's Slack session was borrowed, or the view forwarded).
    response = post_signed(live_server.url, submit_reason(opened["view"], "no", slack_user=CHARLIE_SLACK))

    assert response.json()["response_action"] == "errors"
    assert "charlie@globex.test is not a reviewer" in response.json()["errors"]["reason"]
    assert status_of(request_for_deletion) == "pending"


def test_a_token_cap_card_is_decided_with_its_own_buttons(live_server, fake_slack, config):
    breach = make_token_cap(config)

    post_signed(live_server.url, click(breach, "approve", slack_user=BOB_SLACK))
    assert status_of(breach) == "pending"  # approve is not a token cap's word
    assert "proceed or stop" in fake_slack.calls_to("chat.postEphemeral")[0]["text"]

    post_signed(live_server.url, click(breach, "proceed", slack_user=BOB_SLACK))
    approval = ApprovalRequest.objects.get(pk=breach.pk)
    assert approval.status == "approved"
    assert approval.decision_action == "proceed_past_cap"


def test_clicking_a_request_decided_elsewhere_tells_the_first_decision(
    live_server, fake_slack, alice_api, request_for_deletion
):
    alice_api.post(f"/api/v1/approvals/{request_for_deletion.public_id}/decision", json={"decision": "approve"})

    post_signed(live_server.url, click(request_for_deletion, "reject", slack_user=BOB_SLACK))

    assert status_of(request_for_deletion) == "approved"
    assert fake_slack.calls_to("views.open") == []
    [ephemeral] = fake_slack.calls_to("chat.postEphemeral")
    assert ephemeral["text"].startswith("Already approved by alice@acme.test at ")


def test_two_people_clicking_at_once_make_one_decision_and_both_messages_agree(live_server, fake_slack, slack_world):
    # The rule tells two channels; bob approves in #approvers while alice rejects (with a reason) in #leads.
    approval, messages = chat_posted(slack_world, to_both=True)
    assert set(messages) == {CHANNEL, "C0LEADS"}
    post_signed(
        live_server.url,
        click(approval, "reject", slack_user=ALICE_SLACK, channel="C0LEADS", ts=messages["C0LEADS"].ts),
    )
    [modal] = fake_slack.calls_to("views.open")
    answers = {}
    start = threading.Barrier(2)

    def bob_approves():
        payload = click(approval, "approve", slack_user=BOB_SLACK, channel=CHANNEL, ts=messages[CHANNEL].ts)
        start.wait()
        answers["bob"] = post_signed(live_server.url, payload)

    def alice_rejects():
        payload = submit_reason(modal["view"], "Not today", slack_user=ALICE_SLACK)
        start.wait()
        answers["alice"] = post_signed(live_server.url, payload)

    threads = [threading.Thread(target=bob_approves), threading.Thread(target=alice_rejects)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    approval.refresh_from_db()
    assert approval.status in ("approved", "rejected")
    assert approval.decided_by_email == ("bob@acme.test" if approval.status == "approved" else "alice@acme.test")
    # The one who lost is told the first decision; the one who won is told nothing.
    if approval.status == "approved":
        assert answers["alice"].json()["response_action"] == "update"
        assert "Already approved by bob@acme.test" in str(answers["alice"].json()["view"])
        assert fake_slack.calls_to("chat.postEphemeral") == []
    else:
        assert answers["alice"].json() == {"response_action": "clear"}
        [ephemeral] = fake_slack.calls_to("chat.postEphemeral")
        assert ephemeral["user"] == BOB_SLACK and ephemeral["text"].startswith("Already rejected by alice@acme.test")

    deliveries_send_due()  # what the cluster runs once the decision commits

    updates = fake_slack.calls_to("chat.update")
    assert sorted((update["channel"], update["ts"]) for update in updates) == sorted(
        (channel, message.ts) for channel, message in messages.items()
    )
    first, second = (update["blocks"] for update in updates)
    assert first == second  # both channels show the same, winning decision
    assert not any(block["type"] == "actions" for block in first)
    assert set(SlackMessage.objects.values_list("shown_status", flat=True)) == {approval.status}


def test_a_click_costs_three_queries_more_than_the_decision_itself(fake_slack, bob, config, request_for_deletion):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from approvals.review.decide import approval_decide
    from integrations.inbound import slack_block_action
    from tests.factories import make_approval

    with CaptureQueriesContext(connection) as deciding:
        approval_decide(approval=make_approval(config), user=bob, decision="approve")
    with CaptureQueriesContext(connection) as clicking:
        answer = slack_block_action(payload=click(request_for_deletion, "approve", slack_user=BOB_SLACK))

    assert answer.ephemeral == ""
    assert status_of(request_for_deletion) == "approved"
    # which request, who the email is, whether they review the workspace — then the one decide service
    assert len(clicking) <= len(deciding) + 3, [query["sql"] for query in clicking.captured_queries]


def test_the_openapi_schema_describes_the_endpoint_as_it_answers(live_server, fake_slack, request_for_deletion):
    schema = requests.get(f"{live_server.url}/api/schema/", params={"format": "json"}, timeout=30).json()
    operation = schema["paths"]["/integrations/slack/interactions"]["post"]
    refused = post_signed(live_server.url, click(request_for_deletion, "approve", slack_user=BOB_SLACK), secret="x")
    handled = post_signed(live_server.url, click(request_for_deletion, "approve", slack_user=BOB_SLACK))

    assert "application/x-www-form-urlencoded" in operation["requestBody"]["content"]
    assert {"200", "400", "401", "413"} <= set(operation["responses"])
    assert str(refused.status_code) in operation["responses"] and error_of(refused)["code"] == "signature_invalid"
    assert str(handled.status_code) in operation["responses"]


def test_an_oversized_body_is_refused_with_413_before_it_is_read(live_server, fake_slack):
    body = "payload=" + "x" * (300 * 1024)

    response = requests.post(
        f"{live_server.url}/integrations/slack/interactions", data=body, headers=sign(body), timeout=10
    )

    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"


def test_a_get_is_not_an_interaction(live_server, fake_slack):
    response = requests.get(f"{live_server.url}/integrations/slack/interactions", timeout=10)

    assert response.status_code == 405
    assert error_of(response)["code"] == "method_not_allowed"


def test_a_reason_over_the_limit_is_refused_beside_the_reason_and_decides_nothing(
    live_server, fake_slack, request_for_deletion
):
    post_signed(live_server.url, click(request_for_deletion, "reject", slack_user=BOB_SLACK))
    [opened] = fake_slack.calls_to("views.open")

    submitted = post_signed(live_server.url, submit_reason(opened["view"], "x" * 2001, slack_user=BOB_SLACK))

    # The decide service's own words, where the person can shorten it (Slack keeps the modal open).
    assert submitted.json() == {
        "response_action": "errors",
        "errors": {"reason": "The reason is 2,001 characters; keep it to 2,000."},
    }
    assert status_of(request_for_deletion) == "pending"
