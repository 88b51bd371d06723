"""Every kind of request page, pending and decided — a gate, one approved with edits, a question and a
plan — and the admins' pages (freeze, a version's diff) stay inside 1280 and 390 px in Chromium; a
decided request's page reads top to bottom."""

import pytest
from playwright.sync_api import expect

from approvals.review.decide import approval_decide
from contacts.services import contact_create
from tests.approvals.question_support import ANSWERS
from tests.approvals.test_edits import REFUND, edit_config
from tests.factories import make_approval, make_plan, make_question
from tests.helpers import make_config, make_rule, publish

from .conftest import login
from .test_layout import LAYOUT_PROBLEMS, LONG_MESSAGE

SUMMARY = "Delete the customer record T-4821 and their 3 tickets, as the customer asked in ticket T-4790"


@pytest.fixture
def requests_of_every_kind(acme, alice, bob) -> dict[str, str]:
    support = make_config(acme, "Support agent", pass_information_level="full")
    gate = make_rule(support, message=LONG_MESSAGE)
    publish(support, alice)
    contact_create(config=support, name="Leads", channel="email", channel_ref="${HITL_ACME_SUPPORT_LEADS_EMAIL}")
    contact_create(config=support, name="Finance", channel="email", channel_ref="${HITL_ACME_FINANCE_EMAIL}")
    publish(support, alice, note="Two more contacts")
    common = {"rule_id": gate.public_id, "message": LONG_MESSAGE, "summary": SUMMARY, "level": "full"}
    arguments = {"customer_id": "T-4821", "cascade": ["tickets", "attachments"], "reason": LONG_MESSAGE}
    decided = make_approval(support, arguments=arguments, **common)
    approval_decide(approval=decided, user=bob, decision="approve", reason="Checked the ticket")
    pending = make_approval(support, arguments=arguments, run_id="run_pending", **common)

    billing = edit_config(acme, alice)
    refund_rule = billing.versions.get(number=1).rules[0]
    edited = make_approval(
        billing,
        rule_id=refund_rule["id"],
        boundary="mcp_server",
        target="mcp_billing",
        operation="refund",
        arguments=REFUND,
        level="full",
        message=refund_rule["message"],
        allow_edit=True,
    )
    approval_decide(
        approval=edited,
        user=bob,
        decision="approve",
        arguments={**REFUND, "amount_cents": 20_000, "note": "Half now, " + LONG_MESSAGE[:80]},
        edit=True,
    )
    question, answered = make_question(support), make_question(support, run_id="run_answered")
    approval_decide(approval=answered, user=bob, decision="answer", answers=ANSWERS)
    plan, approved_plan = make_plan(support), make_plan(support, run_id="run_planned")
    approval_decide(approval=approved_plan, user=bob, decision="approve")
    return {
        "decided": decided.public_id,
        "pending": pending.public_id,
        "edited": edited.public_id,
        "question": question.public_id,
        "answered": answered.public_id,
        "plan": plan.public_id,
        "approved plan": approved_plan.public_id,
        "config": support.public_id,
    }


@pytest.mark.parametrize("width", [1280, 390])
def test_every_request_page_and_the_admins_pages_stay_inside_the_window(new_page, alice, requests_of_every_kind, width):
    made = requests_of_every_kind
    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "alice@acme.test")
    paths = [f"/hitl/approvals/{made[kind]}/" for kind in made if kind != "config"]
    paths += [
        "/hitl/workspace/freeze/",
        f"/hitl/configs/{made['config']}/rules/",
        f"/hitl/configs/{made['config']}/versions/2/",
        "/hitl/approvals/history/",
        "/hitl/account/",
    ]
    found = {}
    for path in paths:
        response = page.goto(path)
        assert response.status == 200, path
        width_now = page.evaluate("document.documentElement.scrollWidth")
        problems = page.evaluate(LAYOUT_PROBLEMS)
        if width_now > width or problems:
            found[path] = [f"{width_now} px wide", *problems[:6]]
    assert found == {}


def test_a_decided_requests_page_reads_top_to_bottom(page, alice, bob, acme):
    config = make_config(acme, "Billing", pass_information_level="full")
    rule = make_rule(config, kind="mcp_server", match="mcp_billing", message="Refunds move real money.")
    publish(config, alice)
    refund = make_approval(
        config,
        rule_id=rule.public_id,
        boundary="mcp_server",
        target="mcp_billing",
        operation="issue_refund",
        message="Refunds move real money.",
        summary="Refund 49.00 USD",
        arguments={"ticket_id": "T-4821", "amount_cents": 4900},
        level="full",
    )
    approval_decide(approval=refund, user=bob, decision="approve")
    login(page, "alice@acme.test")
    page.goto(f"/hitl/approvals/{refund.public_id}/")
    request = page.locator("#request")

    message = request.locator(".rule-message").bounding_box()
    summary = request.get_by_role("heading", name="Summary").bounding_box()
    arguments = request.get_by_role("heading", name="Arguments").bounding_box()
    json_box = request.locator("pre.arguments").bounding_box()
    # One under the other, each as wide as the card allows: not on the message's line, not side by side.
    assert message["y"] + message["height"] <= summary["y"]
    assert summary["y"] < arguments["y"] < json_box["y"]
    assert abs(arguments["x"] - json_box["x"]) < 20 and json_box["width"] > 600


def test_a_pending_requests_page_offers_halt_this_run_once(page, bob, requests_of_every_kind):
    login(page, "bob@acme.test")
    page.goto(f"/hitl/approvals/{requests_of_every_kind['pending']}/")

    expect(page.get_by_text("Halt this run…")).to_have_count(1)
    expect(page.locator("#run").get_by_text("Halt this run…")).to_be_visible()
