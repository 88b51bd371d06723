"""Telegram, and a one-click email link: outside a rule's approver groups, nothing is decided, and why is said."""

import pytest

from approvals.models import ApprovalRequest
from tests.people.support import group_world, grouped_approval
from tests.telegram.conftest import (  # noqa: F401 — the fixtures: Telegram's fake and a server that talks to it
    BOB_TG,
    _telegram_api,
    fake_telegram,
    linked,
    live_server,
    post_update,
    press,
)

pytestmark = pytest.mark.usefixtures("fake_telegram", "linked")


def test_a_press_by_someone_outside_the_groups_decides_nothing(live_server, fake_telegram, acme, alice, bob):  # noqa: F811
    approval = grouped_approval(group_world(acme, alice))
    post_update(live_server.url, press(approval, "approve", user=BOB_TG))
    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"
    [answer] = fake_telegram.calls_to("answerCallbackQuery")
    assert answer["show_alert"] is True and "Only members of Payments may decide" in answer["text"]
