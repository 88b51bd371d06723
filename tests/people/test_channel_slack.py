"""Slack: a reviewer outside a rule's approver groups is told `not_an_approver`'s reason; nothing is decided."""

import pytest

from approvals.models import ApprovalRequest
from tests.integrations.conftest import (  # noqa: F401 — the fixtures: Slack's fake and a server that talks to it
    BOB_SLACK,
    _slack_api,
    click,
    fake_slack,
    live_server,
    post_signed,
)
from tests.people.support import group_world, grouped_approval

pytestmark = pytest.mark.usefixtures("fake_slack")


def test_a_click_by_someone_outside_the_groups_decides_nothing(live_server, fake_slack, acme, alice, bob):  # noqa: F811
    approval = grouped_approval(group_world(acme, alice))
    response = post_signed(live_server.url, click(approval, "approve", slack_user=BOB_SLACK))
    assert response.status_code == 200
    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"
    [ephemeral] = fake_slack.calls_to("chat.postEphemeral")
    assert "Only members of Payments may decide" in ephemeral["text"] and "Nothing was decided" in ephemeral["text"]
