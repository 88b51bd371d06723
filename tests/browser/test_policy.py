"""The approver policy in Chromium: a quorum card with two reviewers, four eyes, granting and revoking a run."""

import pytest
from playwright.sync_api import expect

from approvals.models import ApprovalRequest, Grant, Status
from tests.approvals.engine_support import gate_body
from tests.helpers import make_config, make_rule, publish

from .conftest import login

QUEUE = "/hitl/approvals/"


@pytest.fixture
def support(acme, alice):
    config = make_config(acme, "Support agent", pass_information_level="full")
    make_rule(config, approvals_required=2)
    make_rule(config, kind="worker", match="*", allow_run_grant=True, order=20)
    publish(config, alice)
    return config


def card(page, public_id: str):
    return page.locator(f"#card-{public_id}")


@pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="600")  # the cards change only when someone presses a button
def test_two_reviewers_approve_a_quorum_card_and_the_requester_cannot(new_page, alice, bob, engine_api, support):
    quorum = engine_api.post("/api/v1/approvals", gate_body(support, requested_by="bob@acme.test")).json()
    other = engine_api.post("/api/v1/approvals", gate_body(support, run_id="run_2")).json()
    bobs, alices = new_page(), new_page()
    login(bobs, "bob@acme.test")
    login(alices, "alice@acme.test")
    bobs.goto(QUEUE)

    mine = card(bobs, quorum["id"])
    expect(mine).to_contain_text("Requested by you — another reviewer must approve")
    expect(mine.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    expect(mine).to_contain_text("May still approve: alice@acme.test")

    voting = card(bobs, other["id"])
    expect(voting).to_contain_text("0 of 2 approvals")
    voting.get_by_role("button", name="Approve", exact=True).click()
    expect(voting).to_contain_text("1 of 2 approvals — bob@acme.test")
    expect(voting).to_contain_text("You approved — waiting for another reviewer")
    expect(voting.get_by_role("button", name="Approve", exact=True)).to_have_count(0)
    assert ApprovalRequest.objects.get(public_id=other["id"]).status == Status.PENDING

    alices.goto(QUEUE)
    expect(card(alices, other["id"])).to_contain_text("1 of 2 approvals — bob@acme.test")
    card(alices, other["id"]).get_by_role("button", name="Approve", exact=True).click()
    expect(alices.locator(f"#decided-{other['id']}")).to_contain_text("Approved by alice@acme.test")
    expect(card(alices, other["id"])).to_have_count(0)
    decided = engine_api.get(f"/api/v1/approvals/{other['id']}").json()
    assert decided["status"] == "approved"
    assert [vote["by"] for vote in decided["approvals"]] == ["bob@acme.test", "alice@acme.test"]


def test_a_reviewer_grants_the_rest_of_a_run_and_revokes_it_on_the_grants_page(page, bob, engine_api, support):
    first = engine_api.post("/api/v1/approvals", gate_body(support, rule=1, run_id="run_9")).json()
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    granting = card(page, first["id"])
    granting.get_by_label("For").select_option(label="2 hours")
    granting.get_by_role("button", name="Approve for the rest of this run").click()
    expect(page.locator(f"#decided-{first['id']}")).to_contain_text("Approved by bob@acme.test")
    grant = Grant.objects.get()
    assert round((grant.expires_at - grant.created_at).total_seconds()) == 7200

    later = engine_api.post("/api/v1/approvals", gate_body(support, rule=1, run_id="run_9", target="T-2")).json()
    assert later["status"] == "approved" and later["decision"]["grant_id"] == grant.public_id

    page.goto("/hitl/grants/")
    row = page.locator(f"#grant-{grant.public_id}")
    expect(row).to_contain_text("run_9")
    expect(row.locator(".uses")).to_have_text("1")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    expect(page.get_by_text(f"Revoked {grant.public_id}")).to_be_visible()
    expect(page.locator(f"#grant-{grant.public_id}")).to_have_count(0)
    again = engine_api.post("/api/v1/approvals", gate_body(support, rule=1, run_id="run_9", target="T-3")).json()
    assert again["status"] == "pending"
