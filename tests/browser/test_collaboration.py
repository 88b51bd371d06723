"""The people around a request in Chromium: claim, snooze, comments, the run's story, My requests, withdraw."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from collaboration.models import Claim, Comment, Snooze
from collaboration.services import comment_add
from tests.factories import make_approval, make_question, make_token_cap
from tests.helpers import make_config, make_rule, publish

from .conftest import login
from .test_layout import LAYOUT_PROBLEMS

QUEUE = "/hitl/approvals/"
no_refresh = pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="600")
# A right-to-left override: shown as its escape, never obeyed.
BIDI = "Looks fine \u202egnp.exe"


@pytest.fixture
def support(acme, alice):
    config = make_config(acme, "Support agent", pass_information_level="full")
    make_rule(config, message="Deletes of customer data need a second pair of eyes.")
    publish(config, alice)
    return config


def story(support, alice):
    now = timezone.now()
    first = make_approval(support, target="customer T-1", run_id="run_story", created_at=now - timedelta(minutes=5))
    approval_decide(approval=first, user=alice, decision="approve", reason="ticket 991")
    make_question(support, run_id="run_story", created_at=now - timedelta(minutes=4))
    make_token_cap(support, run_id="run_story", created_at=now - timedelta(minutes=3))
    return make_approval(support, target="customer T-4821", run_id="run_story", requested_by="bob@acme.test")


@no_refresh
@pytest.mark.parametrize("width", [1280, 390])
def test_a_reviewer_claims_comments_and_reads_the_run_so_far(new_page, alice, bob, support, width):
    approval = story(support, alice)
    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "alice@acme.test")
    page.goto(f"/hitl/approvals/{approval.public_id}/")

    rows = page.locator("#story .story-row")
    expect(rows).to_have_count(4)
    expect(rows.nth(0)).to_contain_text("Delete customer T-1")
    expect(rows.nth(0)).to_contain_text("Approved")
    expect(rows.nth(3)).to_contain_text("(this request)")

    page.get_by_role("button", name="I’m on it").click()
    expect(page.locator("#people .claim-line")).to_contain_text("You are on it")
    assert Claim.objects.get(approval=approval).user_email == "alice@acme.test"

    page.fill("#comment-text", BIDI)
    page.get_by_role("button", name="Comment").click()
    expect(page.locator("#comments .comment-text")).to_have_text("Looks fine \\u202egnp.exe")
    assert Comment.objects.get(approval=approval).via == "page"
    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"  # a comment never decides
    assert page.evaluate(LAYOUT_PROBLEMS) == []


@no_refresh
def test_a_claim_shows_on_everyones_card_and_a_snooze_hides_it_from_mine_only(new_page, alice, bob, support):
    approval = make_approval(support)
    alice_page = new_page()
    login(alice_page, "alice@acme.test")
    alice_page.goto(f"/hitl/approvals/{approval.public_id}/")
    alice_page.get_by_role("button", name="I’m on it").click()

    bob_page = new_page()
    login(bob_page, "bob@acme.test")
    bob_page.goto(QUEUE)
    expect(bob_page.locator(f"#card-{approval.public_id} + .card-strip .claim-line")).to_have_text(
        "alice@acme.test is on it"
    )

    bob_page.goto(f"/hitl/approvals/{approval.public_id}/")
    bob_page.select_option("#snooze-hours", "4")
    bob_page.get_by_role("button", name="Not now").click()
    expect(bob_page.locator(".flash")).to_contain_text("Hidden from your queue for 4 hour(s)")
    expect(bob_page.locator(f"#card-{approval.public_id}")).to_have_count(0)
    assert Snooze.objects.get(approval=approval).user.email == "bob@acme.test"

    alice_page.goto(QUEUE)
    expect(alice_page.locator(f"#card-{approval.public_id}")).to_be_visible()
    # Bob may still decide it, from its page, though alice is on it and he snoozed it.
    bob_page.goto(f"/hitl/approvals/{approval.public_id}/")
    expect(bob_page.get_by_role("button", name="Approve")).to_be_visible()


@pytest.mark.parametrize("width", [1280, 390])
def test_the_requester_reads_my_requests_and_withdraws_one(new_page, alice, bob, support, width):
    pending = make_approval(support, target="customer T-4821", requested_by="bob@acme.test")
    decided = make_approval(support, target="customer T-7", requested_by="bob@acme.test")
    approval_decide(approval=decided, user=alice, decision="reject", reason="Legal hold on T-7")
    comment_add(approval=decided, user=alice, text="Ask legal first.")
    make_approval(support, target="customer T-9", requested_by="alice@acme.test")

    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "bob@acme.test")
    page.goto("/hitl/my-requests/")
    expect(page.locator(".my-request")).to_have_count(2)
    card = page.locator(f"#{decided.public_id}")
    expect(card).to_contain_text("Rejected")
    expect(card).to_contain_text("Legal hold on T-7")
    expect(card).to_contain_text("Ask legal first.")
    assert page.evaluate(LAYOUT_PROBLEMS) == []

    mine = page.locator(f"#{pending.public_id}")
    mine.get_by_text("Withdraw this request…").click()
    mine.locator("input[name=reason]").fill("Wrong customer")
    mine.get_by_role("button", name="Withdraw").click()
    expect(page.locator(".flash")).to_contain_text("Withdrawn")
    expect(page.locator(f"#{pending.public_id} .badge")).to_have_text("Withdrawn")
    stored = ApprovalRequest.objects.get(pk=pending.pk)
    assert (stored.status, stored.decision_action, stored.reason) == ("withdrawn", "halt", "Wrong customer")


@no_refresh
@pytest.mark.parametrize("width", [1280, 390])
def test_the_queue_card_itself_claims_and_snoozes(new_page, alice, bob, support, width):
    approval = make_approval(support, target="customer T-77")
    other = make_approval(support, target="customer T-78")
    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "alice@acme.test")
    page.goto(QUEUE)
    strip = page.locator(f"#card-{approval.public_id} + .card-strip")
    expect(strip.get_by_role("button", name="Not now (4 h)")).to_be_visible()
    assert page.evaluate(LAYOUT_PROBLEMS) == []

    strip.get_by_role("button", name="I’m on it").click()
    expect(page).to_have_url(f"{page.url.split('/hitl/')[0]}{QUEUE}")  # back on the tab, not the request's page
    expect(strip.locator(".claim-line")).to_have_text("You are on it")
    expect(strip.get_by_role("button", name="I’m on it")).to_have_count(0)  # nobody claims it twice
    assert Claim.objects.get(approval=approval).user_email == "alice@acme.test"

    page.locator(f"#card-{other.public_id} + .card-strip").get_by_role("button", name="Not now (4 h)").click()
    expect(page.locator(".flash")).to_contain_text("Hidden from your queue for 4 hour(s)")
    expect(page.locator(f"#card-{other.public_id}")).to_have_count(0)
    expect(page.locator(f"#card-{approval.public_id}")).to_be_visible()
    snooze = Snooze.objects.get(approval=other)
    assert snooze.user.email == "alice@acme.test"
    assert timedelta(hours=3, minutes=59) < snooze.until - timezone.now() <= timedelta(hours=4)
    assert not ApprovalRequest.objects.get(pk=other.pk).decided_at  # nothing was decided

    bobs = new_page()
    bobs.set_viewport_size({"width": width, "height": 900})
    login(bobs, "bob@acme.test")
    bobs.goto(QUEUE)
    expect(bobs.locator(f"#card-{other.public_id}")).to_be_visible()  # her snooze is hers alone
    expect(bobs.locator(f"#card-{approval.public_id} + .card-strip .claim-line")).to_have_text(
        "alice@acme.test is on it"
    )
