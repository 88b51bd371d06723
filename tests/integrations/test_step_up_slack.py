"""Step-up in Slack: the card says approving needs a passkey; Approve answers, to the presser alone, with
the request's page (approving is done there)."""

import pytest

from approvals.models import ApprovalRequest
from integrations import slack
from integrations.outbound import slack_message_post
from tests.factories import make_approval
from tests.helpers import make_config, make_rule, publish

from .conftest import BOB_SLACK, CHANNEL_REF, click, post_signed
from .test_messages import texts

pytestmark = pytest.mark.usefixtures("fake_slack")


@pytest.fixture
def step_up_request(acme, alice):
    config = make_config(acme, pass_information_level="summary")
    rule = make_rule(config, require_passkey=True)
    publish(config, alice)
    return make_approval(
        config, rule_id=rule.public_id, require_passkey=True, target="customer T-4821", level="summary"
    )


def test_the_card_says_approving_needs_a_passkey(fake_slack, step_up_request):
    slack_message_post(approval=step_up_request, channel=slack.channel_for(CHANNEL_REF), contact_id="con_test")

    [sent] = fake_slack.calls_to("chat.postMessage")
    assert "*Step-up*\nApproving needs your passkey, on the request's page in the portal" in texts(sent["blocks"])


def test_approve_in_slack_answers_the_presser_alone_with_the_requests_page(live_server, fake_slack, step_up_request):
    response = post_signed(live_server.url, click(step_up_request, "approve", slack_user=BOB_SLACK))

    assert response.status_code == 200
    assert ApprovalRequest.objects.get(pk=step_up_request.pk).status == "pending"
    [ephemeral] = fake_slack.calls_to("chat.postEphemeral")
    assert ephemeral["user"] == BOB_SLACK
    assert "needs a passkey" in ephemeral["text"] and "Nothing was decided" in ephemeral["text"]
    assert f"https://portal.example/hitl/approvals/{step_up_request.public_id}/" in ephemeral["text"]
