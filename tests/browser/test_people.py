"""People in Chromium: the People tab, "Out of office" on the account page, and deciding several requests at once."""

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from approvals.models import ApprovalRequest
from people.models import ApproverGroup, Delegation
from tests.factories import make_approval
from tests.helpers import make_config, make_member, make_rule, publish

from .conftest import login
from .test_layout import LAYOUT_PROBLEMS

no_refresh = pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="600")


@pytest.fixture
def support(acme, alice):
    config = make_config(acme, "Support agent", pass_information_level="full")
    make_rule(config, message="Deletes of customer data need a second pair of eyes.")
    publish(config, alice)
    return config


def test_an_admin_keeps_approver_groups_on_the_people_tab(page, alice, bob, acme):
    make_member(acme, "dave@acme.test", "reviewer")
    login(page, "alice@acme.test")
    page.goto("/hitl/approvals/")
    page.get_by_role("link", name="People").click()
    page.get_by_label("New group").fill("Payments approvers")
    page.get_by_role("button", name="Create group").click()
    expect(page.locator(".flash")).to_contain_text("Group Payments approvers created")
    group = ApproverGroup.objects.get(workspace=acme)
    card = page.locator(f"#group-{group.public_id}")
    card.get_by_label("Add a member").select_option("dave@acme.test")
    card.get_by_role("button", name="Add").click()
    expect(page.locator(f"#group-{group.public_id} .group-members")).to_contain_text("dave@acme.test")
    assert list(group.members.values_list("user__email", flat=True)) == ["dave@acme.test"]
    assert page.evaluate(LAYOUT_PROBLEMS) == []


def test_a_reviewer_names_a_stand_in_on_the_account_page_and_an_admin_ends_it(new_page, alice, bob, acme):
    page = new_page()
    login(page, "bob@acme.test")
    page.goto("/hitl/account/")
    section = page.locator("#delegation")
    section.get_by_label("Stand-in").select_option("alice@acme.test")
    until = (timezone.now() + timedelta(days=3)).strftime("%Y-%m-%dT%H:%M")
    section.get_by_label("Until (UTC)").fill(until)
    section.get_by_label("Reason (optional)").fill("Holiday")
    section.get_by_role("button", name="Start delegation").click()
    expect(page.locator("#delegation")).to_contain_text("alice@acme.test stands in for you until")
    delegation = Delegation.objects.live().get()
    assert (delegation.delegator.email, delegation.delegate.email, delegation.reason) == (
        "bob@acme.test",
        "alice@acme.test",
        "Holiday",
    )

    admin = new_page()
    login(admin, "alice@acme.test")
    admin.goto("/hitl/people/")
    row = admin.locator(f"[data-delegation='{delegation.public_id}']")
    expect(row).to_contain_text("bob@acme.test")
    row.get_by_role("button", name="End now").click()
    expect(admin.locator(".flash")).to_contain_text("no longer stands in for bob@acme.test")
    assert not Delegation.objects.live().exists()


@no_refresh
@pytest.mark.parametrize("width", [1280, 390])
def test_a_reviewer_reviews_every_selected_request_in_full_then_rejects_them_together(new_page, bob, support, width):
    chosen = [make_approval(support, target=f"customer T-{n}", summary=f"Delete customer T-{n}") for n in (1, 2)]
    left = make_approval(support, target="customer T-9")
    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "bob@acme.test")
    page.goto("/hitl/approvals/")
    page.get_by_role("link", name="Select several").click()
    for approval in chosen:
        page.locator(f"#pick-{approval.public_id}").check()
    assert page.evaluate(LAYOUT_PROBLEMS) == []
    page.get_by_role("button", name="Review selected").click()

    items = page.locator(".batch-item")
    expect(items).to_have_count(2)
    for approval in chosen:
        item = page.locator(f".batch-item[data-approval='{approval.public_id}']")
        expect(item).to_contain_text(approval.target)
        expect(item).to_contain_text(f"Delete customer {approval.target.split()[-1]}")  # the summary, in full
    assert page.evaluate(LAYOUT_PROBLEMS) == []
    page.get_by_label("Reason (one for all").fill("A cleanup script gone wrong")
    page.get_by_role("button", name="Reject all 2").click()

    for approval in chosen:
        expect(page.locator(f".batch-done [data-approval='{approval.public_id}']")).to_have_attribute(
            "data-status", "rejected"
        )
        stored = ApprovalRequest.objects.get(pk=approval.pk)
        assert (stored.status, stored.reason, stored.decided_by_email) == (
            "rejected",
            "A cleanup script gone wrong",
            "bob@acme.test",
        )
    assert ApprovalRequest.objects.get(pk=left.pk).status == "pending"
    assert page.evaluate(LAYOUT_PROBLEMS) == []
