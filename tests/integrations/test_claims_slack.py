""" "I'm on it" on a request's Slack message: signed presses over real HTTP, the fake Slack API on loopback.

A press claims through collaboration's one claim service; everyone sees who once the cluster refreshes the
request's messages in every channel (run here with run_queued, as the cluster would); a claim never decides.
"""

import pytest

from approvals.models import ApprovalRequest
from collaboration.models import Claim
from contacts.sending import deliveries_send_due
from integrations.chat_claims import TASK
from integrations.models import SlackMessage
from tests.factories import make_approval
from tests.helpers import chat_posted, make_config, run_queued

from .conftest import ALICE_SLACK, BOB_SLACK, CHANNEL, CHARLIE_SLACK, click, post_signed
from .test_messages import buttons, texts

pytestmark = pytest.mark.usefixtures("fake_slack")

CLAIM = ("I’m on it", "hitl_claim")


@pytest.fixture
def posted(slack_world):
    """A request the outbox posted to #approvers and #leads: (the request, {channel: its message})."""
    return chat_posted(slack_world, to_both=True)


def press(live_server, approval, *, slack_user: str, channel: str = CHANNEL, messages: dict):
    response = post_signed(
        live_server.url, click(approval, "hitl_claim", slack_user=slack_user, channel=channel, ts=messages[channel].ts)
    )
    assert response.status_code == 200, response.text
    return response


def test_im_on_it_claims_and_every_channels_message_names_the_claimant(
    live_server, fake_slack, alice_api, alice, client, posted
):
    approval, messages = posted
    for sent in fake_slack.calls_to("chat.postMessage"):
        assert buttons(sent["blocks"])[-1] == CLAIM  # a row of its own, under Reject / Approve
    fake_slack.calls.clear()

    press(live_server, approval, slack_user=BOB_SLACK, messages=messages)

    assert fake_slack.calls_to("chat.postEphemeral") == []  # the message itself says so, to everyone
    # The portal knows: the API refuses alice's claim naming bob, the page names him.
    refused = alice_api.post(f"/api/v1/approvals/{approval.public_id}/claim", json={})
    assert refused.status_code == 409 and "bob@acme.test is on it" in refused.json()["error"]["message"]
    client.force_login(alice)
    assert "bob@acme.test is on it" in client.get(f"/hitl/approvals/{approval.public_id}/").content.decode()

    assert run_queued(TASK) == [2]  # what the cluster runs once the claim commits

    updates = fake_slack.calls_to("chat.update")
    assert sorted(update["channel"] for update in updates) == sorted(messages)
    for update in updates:
        assert "*Claimed by bob@acme.test*" in texts(update["blocks"])
        assert buttons(update["blocks"]) == [("Reject", "reject"), ("Approve", "approve")]  # still decidable
    assert set(SlackMessage.objects.values_list("shown_claim", flat=True)) == {"bob@acme.test"}
    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"  # a claim never decides
    assert run_queued(TASK) == []  # refreshed once


def test_a_press_on_someone_elses_claim_is_told_who_and_changes_nothing(live_server, fake_slack, posted):
    approval, messages = posted
    press(live_server, approval, slack_user=BOB_SLACK, messages=messages)
    run_queued(TASK)
    fake_slack.calls.clear()

    # alice presses on a message that had not refreshed yet (#leads, say)
    press(live_server, approval, slack_user=ALICE_SLACK, channel="C0LEADS", messages=messages)

    [told] = fake_slack.calls_to("chat.postEphemeral")
    assert told["user"] == ALICE_SLACK and told["channel"] == "C0LEADS"
    assert told["text"].startswith("bob@acme.test is on it already")
    assert Claim.objects.get(approval=approval).user_email == "bob@acme.test"
    assert run_queued(TASK) == []  # nothing changed, nothing to refresh


def test_a_claim_never_stops_another_reviewer_deciding_and_a_decided_message_has_no_claim(
    live_server, fake_slack, posted
):
    approval, messages = posted
    press(live_server, approval, slack_user=BOB_SLACK, messages=messages)
    run_queued(TASK)
    fake_slack.calls.clear()

    post_signed(live_server.url, click(approval, "approve", slack_user=ALICE_SLACK, ts=messages[CHANNEL].ts))
    deliveries_send_due()

    assert ApprovalRequest.objects.get(pk=approval.pk).decided_by_email == "alice@acme.test"
    updates = fake_slack.calls_to("chat.update")
    assert len(updates) == 2
    for update in updates:
        assert buttons(update["blocks"]) == []
        assert "Claimed by" not in texts(update["blocks"])
        assert "*Approved by alice@acme.test at " in texts(update["blocks"])
    fake_slack.calls.clear()
    press(live_server, approval, slack_user=ALICE_SLACK, messages=messages)  # a stale message's button
    [told] = fake_slack.calls_to("chat.postEphemeral")
    assert told["text"].startswith("Already approved by alice@acme.test")


def test_a_release_from_the_api_brings_the_button_back(live_server, fake_slack, bob_api, posted):
    approval, messages = posted
    press(live_server, approval, slack_user=BOB_SLACK, messages=messages)
    run_queued(TASK)
    fake_slack.calls.clear()

    assert bob_api.delete(f"/api/v1/approvals/{approval.public_id}/claim").status_code == 204
    assert run_queued(TASK) == [2]

    for update in fake_slack.calls_to("chat.update"):
        assert "Claimed by" not in texts(update["blocks"])
        assert buttons(update["blocks"])[-1] == CLAIM
    assert set(SlackMessage.objects.values_list("shown_claim", flat=True)) == {""}


@pytest.mark.parametrize(
    ("slack_user", "why"),
    [
        (CHARLIE_SLACK, "charlie@globex.test is not a reviewer of acme"),  # a member of another workspace
        ("U0STRANGER", "cannot tell which member you are"),  # Slack shows no email the portal knows
    ],
)
def test_someone_who_may_not_review_it_is_refused_as_the_decide_buttons_refuse(
    live_server, fake_slack, posted, slack_user, why
):
    approval, messages = posted

    press(live_server, approval, slack_user=slack_user, messages=messages)

    [told] = fake_slack.calls_to("chat.postEphemeral")
    assert why in told["text"].lower() and told["user"] == slack_user
    assert not Claim.objects.filter(approval=approval).exists()
    assert run_queued(TASK) == []


def test_a_slack_user_of_workspace_a_cannot_claim_workspace_bs_request(live_server, fake_slack, globex, posted):
    # charlie is an admin of globex; bob, a reviewer of acme, presses on globex's request's message.
    globex_request = make_approval(make_config(globex, "Globex agent"))
    globex_message = SlackMessage.objects.create(approval=globex_request, channel="C0GLOBEX", ts="1764480000.777777")

    press(live_server, globex_request, slack_user=BOB_SLACK, channel="C0GLOBEX", messages={"C0GLOBEX": globex_message})

    [told] = fake_slack.calls_to("chat.postEphemeral")
    assert "bob@acme.test is not a reviewer of globex" in told["text"].lower()
    assert not Claim.objects.exists()
