"""The Rules tab and History stay scannable: a compact row per item, at 1280 px."""

import pytest

from approvals.review.decide import approval_decide
from tests.factories import make_approval

from .conftest import login
from .test_layout import LONG_REASON
from .test_layout import long_names as long_names  # the fixture


@pytest.mark.parametrize("width", [1280, 390])
def test_history_of_fifty_decisions_and_the_rules_tab_are_scannable(new_page, alice, bob, long_names, width):
    config, _ = long_names
    rule = config.versions.get(number=2).rules[0]
    for n in range(47):
        approval = make_approval(config, rule_id=rule["id"], target=f"customer T-{n}", version=2, level="full")
        approval_decide(approval=approval, user=bob, decision="approve" if n % 3 else "reject", reason=LONG_REASON)
    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "alice@acme.test")

    page.goto("/hitl/approvals/history/")
    history = page.evaluate("document.documentElement.scrollHeight")
    rows = page.locator("table.history tbody tr").count()
    page.goto(f"/hitl/configs/{config.public_id}/rules/")
    rules = page.evaluate("document.documentElement.scrollHeight")

    assert rows == 50
    print(f"history {history} px, rules {rules} px at {width}")
    assert history < (4500 if width == 1280 else 10000), f"History is {history} px tall for 50 rows"
    assert rules < (2500 if width == 1280 else 4000), f"the Rules tab is {rules} px tall"
