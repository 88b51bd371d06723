"""The Approvals tab in Chromium: the live queue, deciding from cards, two reviewers, failures."""

import os
import re
import shutil
from datetime import timedelta

import pytest
from playwright.sync_api import expect

from approvals.models import ApprovalRequest, Status
from approvals.review.decide import approval_decide
from tests.factories import make_approval, make_token_cap
from tests.helpers import make_config, make_rule, publish

from .conftest import login

QUEUE = "/hitl/approvals/"
PARTIAL = "**/hitl/approvals/queue/"


@pytest.fixture
def support(acme, alice):
    config = make_config(acme, "Support agent", pass_information_level="full")
    make_rule(config, message="Deletes of customer data need a second pair of eyes.")
    publish(config, alice)
    return config


# The tab refreshes itself every second (ten in production), or never within a test.
fast_refresh = pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="1")
no_refresh = pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="600")


def card(page, approval):
    return page.locator(f"#card-{approval.public_id}")


@fast_refresh
def test_it_shows_a_registered_request_within_one_refresh_without_a_reload(page, bob, engine_api, support):
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    expect(page.get_by_text("Nothing is waiting for a decision")).to_be_visible()
    page.evaluate("window.sameDocument = true")

    version = support.versions.get(number=1)
    response = engine_api.post(
        "/api/v1/approvals",
        {
            "kind": "gate",
            "config_id": support.public_id,
            "config_version": 1,
            "rule_id": version.rules[0]["id"],
            "run_id": "run_7",
            "thread_id": "thr_7",
            "caller": "support-bot",
            "target": "customer T-4821",
            "operation": "delete",
            "summary": "Delete the customer record and their tickets",
            "arguments": {"customer_id": "T-4821"},
        },
    )
    assert response.status_code == 201, response.text

    new_card = page.locator(f"#card-{response.json()['id']}")
    expect(new_card).to_be_visible(timeout=3000)
    expect(new_card.get_by_role("heading", level=2)).to_have_text("Delete customer T-4821")
    expect(new_card).to_contain_text("Deletes of customer data need a second pair of eyes.")
    expect(new_card).to_contain_text(f"{support.public_id}@1")
    expect(new_card).to_contain_text('"customer_id": "T-4821"')
    expect(new_card.locator(".countdown")).to_have_text(re.compile(r"expires in 23h 5\dm"))
    assert page.evaluate("window.sameDocument") is True  # swapped in place, never reloaded


@fast_refresh
def test_it_approves_and_rejects_from_the_card(page, bob, support):
    to_reject = make_approval(support, target="customer T-1")
    to_approve = make_approval(support, target="customer T-2")
    login(page, "bob@acme.test")
    page.goto(QUEUE)

    rejecting = card(page, to_reject)
    rejecting.get_by_placeholder(re.compile("Reason")).fill("Wrong customer: T-1 is a VIP")
    rejecting.get_by_role("button", name="Reject").click()
    expect(rejecting).to_have_count(0)
    expect(page.locator(f"#decided-{to_reject.public_id}")).to_contain_text("Rejected by bob@acme.test at")

    card(page, to_approve).get_by_role("button", name="Approve").click()
    expect(card(page, to_approve)).to_have_count(0)
    expect(page.locator(f"#decided-{to_approve.public_id}")).to_contain_text("Approved by bob@acme.test at")

    rejected = ApprovalRequest.objects.get(pk=to_reject.pk)
    assert (rejected.status, rejected.reason, rejected.decision_action) == (
        "rejected",
        "Wrong customer: T-1 is a VIP",
        "halt",
    )
    assert ApprovalRequest.objects.get(pk=to_approve.pk).decision_action == "resume"
    # The next refreshes leave both out of the queue.
    page.wait_for_timeout(1500)
    expect(page.get_by_text("Nothing is waiting for a decision")).to_be_visible()


@fast_refresh
def test_it_keeps_a_typed_reason_across_refreshes(page, bob, support):
    approval = make_approval(support)
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    reason = card(page, approval).get_by_placeholder(re.compile("Reason"))
    reason.fill("Half-typed reason")
    with page.expect_response(lambda r: r.url.endswith("/hitl/approvals/queue/")):
        pass
    with page.expect_response(lambda r: r.url.endswith("/hitl/approvals/queue/")):
        pass
    expect(reason).to_have_value("Half-typed reason")


@no_refresh
def test_it_shows_the_second_reviewer_the_first_decision(new_page, alice, bob, support):
    approval = make_approval(support, target="customer T-4821")
    bobs, alices = new_page(), new_page()
    login(bobs, "bob@acme.test")
    login(alices, "alice@acme.test")
    bobs.goto(QUEUE)
    alices.goto(QUEUE)

    card(bobs, approval).get_by_role("button", name="Approve").click()
    expect(bobs.locator(f"#decided-{approval.public_id}")).to_contain_text("Approved by bob@acme.test")

    card(alices, approval).get_by_role("button", name="Reject").click()
    notice = alices.locator(f"#decided-{approval.public_id}")
    expect(notice).to_contain_text(re.compile(r"Already approved by bob@acme\.test at \d{4}-\d\d-\d\d \d\d:\d\d"))
    expect(card(alices, approval)).to_have_count(0)
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.APPROVED


@fast_refresh
def test_it_says_the_queue_is_unavailable_and_recovers_by_itself(page, bob, alice, support):
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    notice = page.get_by_text("The approval queue is temporarily unavailable.")
    expect(notice).to_be_hidden()

    page.route(PARTIAL, lambda route: route.fulfill(status=500, body="Server Error"))
    expect(notice).to_be_visible(timeout=3000)
    arrived = make_approval(support, target="customer T-9")

    page.unroute(PARTIAL)
    expect(notice).to_be_hidden(timeout=3000)
    expect(card(page, arrived)).to_be_visible()

    page.route(PARTIAL, lambda route: route.abort())  # the network itself fails
    expect(notice).to_be_visible(timeout=3000)
    page.unroute(PARTIAL)
    expect(notice).to_be_hidden(timeout=3000)


@fast_refresh
def test_it_removes_a_request_decided_elsewhere_on_the_next_refresh(page, bob, alice, support):
    approval = make_approval(support)
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    expect(card(page, approval)).to_be_visible()
    approval_decide(approval=approval, user=alice, decision="approve")
    expect(card(page, approval)).to_have_count(0, timeout=3000)


@fast_refresh
def test_it_pauses_the_refresh_while_the_tab_is_hidden(page, bob, support):
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    refreshes = []
    page.on("request", lambda request: refreshes.append(1) if request.url.endswith("/hitl/approvals/queue/") else None)
    page.evaluate(
        """() => {
        Object.defineProperty(document, "visibilityState", {value: "hidden", configurable: true});
        document.dispatchEvent(new Event("visibilitychange"));
    }"""
    )
    page.wait_for_timeout(300)
    refreshes.clear()
    page.wait_for_timeout(2500)
    assert refreshes == []
    approval = make_approval(support)
    page.evaluate(
        """() => {
        Object.defineProperty(document, "visibilityState", {value: "visible", configurable: true});
        document.dispatchEvent(new Event("visibilitychange"));
    }"""
    )
    expect(card(page, approval)).to_be_visible(timeout=1500)
    assert refreshes


@fast_refresh
def test_it_shows_a_token_cap_card_with_its_meter_and_buttons(page, bob, support):
    cap = make_token_cap(support, tokens_used=45_000, token_cap=50_000, scope="workspace")
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    cap_card = card(page, cap)
    expect(cap_card.get_by_role("heading", level=2)).to_have_text("Token cap reached")
    expect(cap_card).to_contain_text("45,000 of 50,000 tokens used (90% of the cap)")
    expect(cap_card).to_contain_text("workspace-wide token limit")
    meter = cap_card.get_by_role("meter")
    expect(meter).to_have_attribute("aria-valuenow", "45000")
    bar = meter.locator("span").bounding_box()
    whole = meter.bounding_box()
    assert abs(bar["width"] / whole["width"] - 0.9) < 0.02
    stop = cap_card.get_by_role("button", name="Stop the run")
    proceed = cap_card.get_by_role("button", name="Proceed past cap")
    assert stop.bounding_box()["x"] < proceed.bounding_box()["x"]
    expect(cap_card.get_by_role("link", name=re.compile("Token caps"))).to_have_attribute(
        "href", re.compile(rf"/{support.public_id}/settings/#token-caps$")
    )

    proceed.click()
    expect(page.locator(f"#decided-{cap.public_id}")).to_contain_text("Proceeded past cap by bob@acme.test")
    assert ApprovalRequest.objects.get(pk=cap.pk).decision_action == "proceed_past_cap"


@fast_refresh
def test_it_puts_approve_rightmost_on_every_gate_card(page, bob, support):
    approval = make_approval(support)
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    buttons = card(page, approval).get_by_role("button")
    boxes = [buttons.nth(i).bounding_box()["x"] for i in range(buttons.count())]
    assert buttons.last.inner_text() == "Approve" and boxes[-1] == max(boxes)


@no_refresh
def test_it_pictures_the_approvals_tab(page, bob, acme, support, tmp_path):
    """The README's screenshot: a few cards of different kinds."""
    notebook = make_config(acme, "Data notebook", pass_information_level="summary")
    make_approval(
        support,
        target="customer T-4821",
        message="Deletes of customer data need a second pair of eyes.",
        summary="Delete the customer record and their 14 tickets",
        arguments={"customer_id": "T-4821", "cascade": True},
        created_at=support.created_at - timedelta(minutes=4),
    )
    make_approval(
        support,
        boundary="mcp_server",
        target="mcp_billing",
        operation="issue_refund",
        message="Refunds move real money.",
        summary="Refund 49.00 USD on ticket T-4821",
        arguments={"ticket_id": "T-4821", "amount_cents": 4900},
        created_at=support.created_at - timedelta(minutes=2),
    )
    make_approval(notebook, boundary="cell", target="12", operation="run", summary="Writes 3 rows to warehouse.sales")
    make_token_cap(support, tokens_used=51_200, token_cap=50_000)
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    expect(page.locator("article.approval")).to_have_count(4)
    shot = tmp_path / "approvals-tab.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    if os.environ.get("HITL_SCREENSHOT_DIR"):  # regenerate the README's picture on purpose only
        shutil.copy(shot, os.path.join(os.environ["HITL_SCREENSHOT_DIR"], "approvals-tab.png"))
