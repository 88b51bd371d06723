"""Halting in Chromium: "Halt this run" on a card and on a request page, the admins' "Freeze workspace" switch."""

import re

import pytest
from playwright.sync_api import expect

from approvals.models import ApprovalRequest, Halt
from tests.factories import make_approval
from tests.helpers import make_config, make_rule, publish

from .conftest import login

QUEUE = "/hitl/approvals/"
REASON = "It is looping over every customer"
no_refresh = pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="600")


@pytest.fixture
def support(acme, alice):
    config = make_config(acme, "Support agent", pass_information_level="full")
    make_rule(config, message="Deletes of customer data need a second pair of eyes.")
    publish(config, alice)
    return config


@no_refresh
def test_a_reviewer_halts_a_run_from_its_card(page, bob, support):
    wild = [make_approval(support, target=f"customer T-{i}", run_id="run_wild") for i in range(2)]
    calm = make_approval(support, target="customer T-9", run_id="run_calm")
    login(page, "bob@acme.test")
    page.goto(QUEUE)

    first = page.locator(f"#card-{wild[0].public_id}")
    first.get_by_text("Halt this run…").click()
    first.get_by_placeholder(re.compile("Why halt the run")).fill(REASON)
    first.get_by_role("button", name="Halt this run").click()

    expect(page.locator(".flash")).to_contain_text("Run run_wild halted: 2 pending request(s) rejected")
    for approval in wild:
        expect(page.locator(f"#card-{approval.public_id}")).to_have_count(0)
        stored = ApprovalRequest.objects.get(pk=approval.pk)
        assert (stored.status, stored.decision_action, stored.reason) == ("rejected", "halt", REASON)
    expect(page.locator(f"#card-{calm.public_id}")).to_be_visible()


@no_refresh
def test_a_halted_runs_request_page_says_so_and_resumes_it(page, bob, support):
    approval = make_approval(support, run_id="run_wild")
    login(page, "bob@acme.test")
    page.goto(f"/hitl/approvals/{approval.public_id}/")

    page.locator("#run").get_by_text("Halt this run…").click()
    page.locator("#run").get_by_placeholder(re.compile("Why halt the run")).fill(REASON)
    page.locator("#run").get_by_role("button", name="Halt this run").click()

    expect(page.locator("#run")).to_contain_text("This run is halted")
    expect(page.locator("#request")).to_contain_text("Rejected")
    page.get_by_role("button", name="Resume this run").click()
    expect(page.locator("#run").get_by_text("Halt this run…")).to_be_visible()
    assert not Halt.objects.in_force().exists()


@no_refresh
def test_an_admin_freezes_the_workspace_and_every_page_shows_the_banner(new_page, alice, bob, support):
    pending = make_approval(support)
    admin = new_page()
    login(admin, "alice@acme.test")
    admin.goto(QUEUE)

    admin.get_by_role("link", name="Freeze workspace…").click()
    admin.get_by_label("Why freeze every run").fill(REASON)
    admin.get_by_role("button", name="Freeze and reject 1 pending request").click()

    banner = admin.locator(".banner.frozen")
    expect(banner).to_contain_text("Workspace frozen by alice@acme.test")
    expect(banner).to_contain_text(f"“{REASON}”")
    assert ApprovalRequest.objects.get(pk=pending.pk).status == "rejected"
    reviewer = new_page()
    login(reviewer, "bob@acme.test")
    for path in (QUEUE, "/hitl/approvals/history/", f"/hitl/approvals/{pending.public_id}/"):
        reviewer.goto(path)
        expect(reviewer.locator(".banner.frozen")).to_contain_text("every request is rejected until an admin thaws it")
    expect(reviewer.get_by_role("switch")).to_have_count(0)  # admins only

    admin.get_by_role("switch", name=re.compile("thaw it")).click()
    expect(admin.locator(".banner.frozen")).to_have_count(0)
    expect(admin.locator(".flash")).to_contain_text("Workspace thawed")


@no_refresh
def test_a_freeze_asks_for_confirmation_and_says_how_many_requests_it_rejects(page, alice, acme, support):
    other = make_config(acme, "Data notebook")
    make_rule(other, kind="cell", match="*")
    publish(other, alice)
    waiting = [make_approval(support, run_id=f"run_{n}") for n in range(3)] + [make_approval(other)]
    login(page, "alice@acme.test")
    page.goto(QUEUE)
    expect(page.locator("header, .hitl-header").get_by_role("textbox")).to_have_count(0)  # no reason box on every page

    page.get_by_role("link", name="Freeze workspace…").click()
    expect(page.locator("#freeze")).to_contain_text("4 pending requests are rejected now")
    reason = page.get_by_label("Why freeze every run")
    assert reason.evaluate("el => el.tagName") == "TEXTAREA" and reason.bounding_box()["width"] > 400
    page.get_by_role("link", name="Cancel").click()  # changed their mind: nothing happened
    assert ApprovalRequest.objects.filter(status="pending").count() == 4

    page.get_by_role("link", name="Freeze workspace…").click()
    page.get_by_role("button", name="Freeze and reject 4 pending requests").click()  # the reason is required
    assert ApprovalRequest.objects.filter(status="pending").count() == 4
    page.get_by_label("Why freeze every run").fill(REASON)
    page.get_by_role("button", name="Freeze and reject 4 pending requests").click()

    expect(page.locator(".flash")).to_contain_text("Workspace frozen: 4 pending request(s) rejected")
    assert {a.status for a in ApprovalRequest.objects.filter(pk__in=[w.pk for w in waiting])} == {"rejected"}
