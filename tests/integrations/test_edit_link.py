"""Slack cannot edit a call's arguments: where the rule allows edits, its message offers "Edit in the portal"."""

import pytest

from approvals.review.decide import approval_decide
from integrations import blocks
from tests.factories import make_approval

from .test_messages import markup

pytestmark = pytest.mark.usefixtures("fake_slack")


def refund(config, **fields):
    return make_approval(
        config, boundary="mcp_server", target="mcp_billing", operation="refund", level="full",
        arguments={"amount_cents": 50_000}, **fields,
    )  # fmt: skip


def test_a_pending_request_whose_rule_allows_edits_links_to_the_cards_editor(config, bob):
    approval = refund(config, allow_edit=True)
    text = markup(blocks.request_blocks(approval))
    assert f"/hitl/approvals/{approval.public_id}/#edit-{approval.public_id}|Edit in the portal>" in text
    assert "Open in portal" in text

    approval_decide(approval=approval, user=bob, decision="approve")
    approval.refresh_from_db()
    assert "Edit in the portal" not in markup(blocks.request_blocks(approval))  # nothing is left to edit


def test_a_request_whose_rule_does_not_allow_edits_has_no_edit_link(config):
    assert "Edit in the portal" not in markup(blocks.request_blocks(refund(config)))
