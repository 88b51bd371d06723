"""Under the Content-Security-Policy, Chromium reports no violation and every page still works."""

from playwright.sync_api import expect

from tests.factories import make_token_cap
from tests.helpers import make_config, make_rule, publish

from .conftest import login


def watch_csp(page) -> list[str]:
    violations: list[str] = []
    page.on("console", lambda msg: violations.append(msg.text) if "Content Security Policy" in msg.text else None)
    return violations


def test_pages_and_api_docs_work_without_a_csp_violation(page, acme, alice):
    config = make_config(acme)
    make_rule(config)
    publish(config, alice)
    make_token_cap(config, tokens_used=25_000, token_cap=50_000)
    violations = watch_csp(page)
    login(page, "alice@acme.test")

    page.goto("/hitl/approvals/")
    expect(page.locator(".meter > span")).to_have_attribute("style", "width: 50%;")
    page.goto(f"/hitl/configs/{config.public_id}/rules/")
    page.click("#add-rule")
    page.wait_for_url("**/rules/add/")  # loaded: htmx (deferred) listens for the kind's change from here on
    page.select_option("#id_kind", "cell")
    expect(page.locator("#id_which_legend")).to_have_text("Which cell")
    page.goto("/api/docs/")
    expect(page.locator(".swagger-ui .info .title")).to_contain_text("HITL Portal API", timeout=20_000)

    assert violations == []
