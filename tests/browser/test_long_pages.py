"""The Rules tab and History stay scannable with 50 of each: a compact row per item, details on demand,
filters that narrow the list on the server, and pages that keep their place — at 1280 and 390 px."""

import pytest
from playwright.sync_api import expect

from approvals.review.decide import approval_decide
from tests.factories import make_approval
from tests.helpers import make_member, make_rule, publish

from .conftest import login
from .test_layout import LONG_REASON
from .test_layout import long_names as long_names  # the fixture

KINDS = ("delete", "mcp_server", "cell", "worker")


@pytest.fixture
def fifty(acme, alice, bob, long_names):
    """The long-names config with 50 rules in its draft, 12 versions, and 55 decided requests (52 by two reviewers)."""
    config, _ = long_names
    carol = make_member(acme, "carol@acme.test", "reviewer")
    for n in range(47):
        kind = KINDS[n % 4]
        make_rule(
            config,
            kind=kind,
            match=f"mcp_tool_{n}" if kind == "mcp_server" else f"customer-records-{n}",
            order=100 + n,
            message=f"Rule {n}: " + LONG_REASON,
            condition='target.startsWith("build/")' if n % 5 == 0 else "",
            mode="shadow" if n % 7 == 0 else "gate",
            enabled=n % 6 != 0,
        )
        if n % 5 == 0:  # 10 more versions: 12 in all, each changing many rules
            publish(config, alice, note=f"Version with rule {n}")
    rule = config.versions.get(number=2).rules[0]
    for n in range(52):
        approval = make_approval(config, rule_id=rule["id"], target=f"customer T-{n}", version=2, level="full")
        decision = "approve" if n % 3 else "reject"
        approval_decide(approval=approval, user=carol if n % 2 else bob, decision=decision, reason=LONG_REASON)
    return config


@pytest.mark.parametrize("width", [1280, 390])
def test_fifty_rules_and_fifty_decisions_stay_short_pages(new_page, alice, fifty, width):
    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "alice@acme.test")

    page.goto(f"/hitl/configs/{fifty.public_id}/rules/")
    rules = page.evaluate("document.documentElement.scrollHeight")
    assert page.locator("#rules tbody tr").count() == 50
    assert page.locator("#versions tbody tr").count() == 10  # the newest ten, the rest a link away
    expect(page.locator("#all-versions")).to_have_text("2 older versions →")
    page.goto("/hitl/approvals/history/")
    history = page.evaluate("document.documentElement.scrollHeight")
    assert page.locator("table.history tbody tr").count() == 50
    assert page.evaluate("document.documentElement.scrollWidth") <= width

    print(f"rules tab {rules} px, history {history} px at {width} px")
    # On a phone a rule is two short lines (its name, then its buttons) under a header three times as tall.
    assert rules < (2600 if width == 1280 else 4500), f"the Rules tab is {rules} px tall with 50 rules at {width} px"
    assert history < 5000, f"History is {history} px tall for 50 rows at {width} px"


def test_the_rules_filters_narrow_the_list_on_the_server(new_page, alice, fifty):
    page = new_page()
    login(page, "alice@acme.test")
    rules = f"/hitl/configs/{fifty.public_id}/rules/"
    page.goto(rules)

    page.get_by_text("Filter rules").click()  # folded away until a filter is set
    page.select_option("#id_kind", "worker")
    page.select_option("#id_enabled", "yes")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**kind=worker**")
    rows = page.locator("#rules tbody tr")
    expect(rows).not_to_have_count(50)
    kinds = {row.locator("td").nth(1).inner_text() for row in rows.all()}
    assert kinds == {"Worker"}
    assert all("enabled" in row.inner_text() for row in rows.all())

    page.goto(rules + "?condition=yes&mode=gate")
    assert {row.locator("td").nth(4).inner_text() for row in page.locator("#rules tbody tr").all()} == {"yes"}
    page.goto(rules + "?q=mcp_tool_13")
    expect(page.locator("#rules tbody tr")).to_have_count(1)
    row = page.locator("#rules tbody tr")
    row.get_by_text("Details").click()  # the rest of the rule, on demand
    expect(row.locator(".rule-details dl")).to_contain_text("Rule 13:")
    page.goto(rules + "?kind=nonsense")
    expect(page.locator(".rule-filters .error")).to_contain_text("Select a valid choice")
    page.goto(rules + "?versions=all")
    assert page.locator("#versions tbody tr").count() == 12


def test_history_filters_and_pages_keep_their_place(new_page, bob, fifty):
    page = new_page()
    login(page, "bob@acme.test")
    rows = page.locator("table.history tbody tr")
    page.goto("/hitl/approvals/history/?decided_by=carol")
    assert rows.count() == 26 and all("carol@acme.test" in row.inner_text() for row in rows.all())
    page.goto("/hitl/approvals/history/?q=T-4")  # T-4, T-40 … T-49
    assert rows.count() == 11 and all("T-4" in row.inner_text() for row in rows.all())
    rule_id = fifty.versions.get(number=2).rules[0]["id"]
    page.goto(f"/hitl/approvals/history/?rule={rule_id}&status=approved")
    assert rows.count() == 34  # two in three of the 52
    page.goto("/hitl/approvals/history/?rule=rul_nobody")
    expect(page.get_by_text("No decided or expired requests match.")).to_be_visible()

    # 50 a page: the older page and the way back to the newest both keep the filter.
    page.goto("/hitl/approvals/history/?q=customer+T-")
    assert rows.count() == 50
    expect(page.locator("#newest")).to_have_count(0)
    page.locator("a[rel=next]").click()
    page.wait_for_url("**cursor=**")
    assert "q=customer" in page.url and rows.count() == 2
    page.locator("#newest").click()
    page.wait_for_url(lambda url: "cursor" not in url)
    assert "q=customer" in page.url and rows.count() == 50
    # A row's rule is a filter away.
    rows.first.get_by_text("Details").click()
    rows.first.locator("a.rule-filter").click()
    page.wait_for_url("**rule=**")
    assert rows.count() == 50
