"""Conditions and the dry run in Chromium: the live compile check, the Dry run's chart, no CSP violation."""

import pytest
from playwright.sync_api import expect

from rules.models import Rule
from tests.approvals.engine_support import gate_body
from tests.helpers import make_config, make_rule, publish

from .conftest import login
from .test_csp import watch_csp


@pytest.fixture
def billing(acme, alice):
    config = make_config(acme, "Billing agent", pass_information_level="full")
    make_rule(config, kind="mcp_server", match="mcp_billing", condition="arguments.amount_cents > 10000")
    publish(config, alice)
    return config


def test_the_editor_says_what_is_wrong_with_a_condition_as_it_is_typed(page, alice, billing):
    violations = watch_csp(page)
    login(page, "alice@acme.test")
    rule = Rule.objects.get(config=billing)
    page.goto(f"/hitl/configs/{billing.public_id}/rules/{rule.public_id}/")
    box = page.locator("#id_condition")
    box.fill("amount_cents > 10000")
    expect(page.locator("#condition-check")).to_contain_text("names amount_cents at position 1")
    box.fill('arguments.amount_cents > 10000 && !caller.startsWith("svc-")')
    expect(page.locator("#condition-check")).to_contain_text("Compiles. Reads arguments, caller.")
    page.get_by_role("button", name="Save rule").click()
    expect(page.locator("#rules")).to_contain_text('!caller.startsWith("svc-")')
    assert not violations


def test_the_dry_run_button_draws_its_numbers_and_chart(page, alice, billing, engine_api):
    rule = Rule.objects.get(config=billing)
    for amount in (20_000, 30_000, 5_000):
        engine_api.post(
            "/api/v1/approvals", gate_body(billing, rule_id=rule.public_id, arguments={"amount_cents": amount})
        )
    rule.condition = "arguments.amount_cents > 25000"
    rule.save()
    violations = watch_csp(page)
    login(page, "alice@acme.test")
    page.goto(f"/hitl/configs/{billing.public_id}/rules/")
    page.locator("#dry-run summary").click()  # folded, as Rule windows is: the Rules tab stays short
    page.get_by_role("button", name="Dry run").click()
    result = page.locator("#dry-run-result")
    expect(result).to_contain_text("would still ask 1, no longer ask 1, newly ask 0")
    expect(result.locator("svg.dry-run-chart rect")).to_have_count(3)
    assert not violations
