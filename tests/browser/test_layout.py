"""Every page reads at 1280 and 390 px with long names in the data: nothing is wider than the window, no
control is cut off, and no word or id is broken across lines (a word breaks only when it is longer than
its whole line). Tables stack into cards on a phone. Screenshots go to $HITL_SCREENSHOTS when it is set."""

import os

import pytest
from playwright.sync_api import expect

from approvals.review.decide import approval_decide
from contacts.services import contact_create
from tests.factories import make_approval, make_token_cap
from tests.helpers import make_config, make_member, make_rule, publish

from .conftest import login

LONG_NAME = (
    "Customer support agent for enterprise accounts in the EMEA region, handling refunds, account deletions, "
    "data exports and escalations from the premium tier helpdesk"
)
LONG_EMAIL = "security.review.board@enterprise-accounts.acme.test"
LONG_MESSAGE = (
    "Deleting a customer's records is permanent: confirm the ticket, the customer's written request and that "
    "no legal hold applies before approving. Escalate to the data protection officer when in doubt."
)
LONG_MATCH = "crm/customers/enterprise/emea/records"
# A link in a message is one long word: it may break only because no line holds it whole.
WIKI = "https://wiki.acme.test/governance/data-protection/customer-deletion-procedure-for-enterprise-accounts"
LONG_REASON = "Confirmed with the account manager on the escalation call; the legal hold was lifted yesterday."


@pytest.fixture
def long_names(acme, alice, bob):
    reviewer = make_member(acme, LONG_EMAIL, "reviewer")
    config = make_config(acme, LONG_NAME, pass_information_level="full")
    make_config(acme, "Another agent whose name is long too: " + LONG_NAME[:150])
    contact = contact_create(
        config=config,
        name="Enterprise support leads, EMEA on-call rotation (weekdays)",
        channel="email",
        channel_ref="${HITL_ACME_ENTERPRISE_SUPPORT_LEADS_EMEA_ONCALL_EMAIL}",
    )
    gate = make_rule(config, match=LONG_MATCH, message=LONG_MESSAGE, notify=[contact.public_id], approvals_required=2)
    granting = make_rule(
        config, kind="mcp_server", match="mcp_billing", message=LONG_MESSAGE, allow_run_grant=True, order=20
    )
    publish(config, alice, note="First version, " + LONG_MESSAGE[:120])
    make_rule(config, kind="worker", match="*", order=30, message=f"Workers write to production: read {WIKI} first.")
    version = publish(config, alice, note="Also gate workers; " + LONG_MESSAGE[:120]).number
    common = {"version": version, "level": "full", "caller": "enterprise-support-agent-emea"}
    make_approval(
        config,
        rule_id=gate.public_id,
        target=LONG_MATCH + "/T-4821",
        summary=LONG_MESSAGE,
        approvals_required=2,
        **common,
    )
    make_approval(
        config,
        rule_id=granting.public_id,
        boundary="mcp_server",
        target="mcp_billing",
        operation="issue_refund",
        run_id="run_enterprise_emea_2026_12_01_refunds",
        allow_run_grant=True,
        arguments={"ticket": "T-4821", "amount_cents": 4900},
        **common,
    )
    make_token_cap(config, tokens_used=51_200, token_cap=50_000, version=version)
    decided = []
    for n in range(3):
        approval = make_approval(
            config,
            rule_id=granting.public_id,
            target=f"mcp_billing/{n}",
            run_id=f"run_granted_{n}",
            allow_run_grant=True,
            created_at=None,
            **common,
        )
        approval_decide(
            approval=approval,
            user=reviewer if n else bob,
            decision="approve",
            reason=LONG_REASON,
            grant_ttl_seconds=3600 if n == 0 else None,
        )
        decided.append(approval)
    return config, decided[0]


def pages(config, decided) -> list[str]:
    cfg = config.public_id
    return [
        "/hitl/approvals/",
        "/hitl/approvals/history/",
        "/hitl/grants/",
        f"/hitl/approvals/{decided.public_id}/",
        "/hitl/configs/",
        f"/hitl/configs/{cfg}/rules/",
        f"/hitl/configs/{cfg}/contacts/",
        f"/hitl/configs/{cfg}/settings/",
        f"/hitl/configs/{cfg}/versions/2/",
        "/hitl/insights/",
        "/hitl/account/",
        "/hitl/my-requests/",
    ]


# Everything a reader would call broken: a page wider than the window, a control past the window's edge
# or cut off by its container, and a word wrapped across lines although it fits on one (words end at
# white space, hyphens and dashes — where a line may break). A word longer than a whole line may break,
# but only on a real line: one at least 12 em wide, not a column squeezed to a few letters.
LAYOUT_PROBLEMS = """() => {
  const problems = [];
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width + 1) {
    problems.push(`the page is ${document.documentElement.scrollWidth} px wide`);
  }
  const controls = "main button, main .button, main select, main input, main textarea, main th, main td";
  for (const el of document.querySelectorAll(controls)) {
    const box = el.getBoundingClientRect();
    if (!box.width || getComputedStyle(el).visibility === "hidden" || el.closest("thead, .visually-hidden")) continue;
    if (box.right > width + 1) problems.push(`past the edge: ${el.outerHTML.slice(0, 90)}`);
    const card = el.closest(".card");
    if (card && box.right > card.getBoundingClientRect().right + 1) {
      problems.push(`past its card: ${el.outerHTML.slice(0, 90)}`);
    }
    for (let up = el.parentElement; up && up !== document.body; up = up.parentElement) {
      if (getComputedStyle(up).overflowX !== "visible") {
        if (box.right > up.getBoundingClientRect().right + 1) problems.push(`cut off: ${el.outerHTML.slice(0, 90)}`);
        break;
      }
    }
  }
  const lineWidth = (el) => {
    let block = el;
    while (block.parentElement && getComputedStyle(block).display.startsWith("inline")) block = block.parentElement;
    const style = getComputedStyle(block);
    return block.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  };
  const walker = document.createTreeWalker(document.querySelector("main"), NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  while (walker.nextNode()) {
    const node = walker.currentNode;
    const parent = node.parentElement;
    if (!parent || parent.closest("svg, select, textarea, script, .visually-hidden")) continue;
    const hidden = parent.closest("thead") || parent;  // a phone's table headers are there for screen readers
    if (!parent.getClientRects().length || hidden.getBoundingClientRect().width <= 1) continue;
    for (const match of node.data.matchAll(/[^\\s\\-\\u2010-\\u2015]+/g)) {
      range.setStart(node, match.index);
      range.setEnd(node, match.index + match[0].length);
      const rects = Array.from(range.getClientRects()).filter((r) => r.width > 0);
      if (new Set(rects.map((r) => Math.round(r.top))).size < 2) continue;
      // Longer than its line is no excuse when the line is a squeezed column: a line holds 12 em at least.
      const wide = rects.reduce((sum, r) => sum + r.width, 0);
      const line = lineWidth(parent);
      if (wide <= line || line < 12 * parseFloat(getComputedStyle(parent).fontSize)) {
        const where = `<${parent.tagName.toLowerCase()} class="${parent.className}">`;
        problems.push(`"${match[0].slice(0, 40)}" broken in ${where}`);
      }
    }
  }
  return problems;
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_every_page_fits_and_breaks_no_word_with_long_names(new_page, alice, long_names, width):
    config, decided = long_names
    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "alice@acme.test")
    shots = os.environ.get("HITL_SCREENSHOTS")
    found = {}
    for path in pages(config, decided):
        response = page.goto(path)
        assert response.status == 200, path
        if shots:
            name = path.strip("/").replace("/", "_") or "home"
            page.screenshot(path=f"{shots}/{width}-{name}.png", full_page=True)
        problems = page.evaluate(LAYOUT_PROBLEMS)
        if problems:
            found[path] = problems[:8]
    assert found == {}


def test_on_a_phone_a_table_row_is_a_card_whose_cells_say_their_column(new_page, alice, long_names):
    config, _ = long_names
    page = new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, "alice@acme.test")
    page.goto(f"/hitl/configs/{config.public_id}/contacts/")

    row = page.locator("main table tbody tr").first
    boxes = [cell.bounding_box() for cell in row.locator("td").all() if cell.is_visible()]
    assert len({round(box["x"]) for box in boxes}) == 1  # stacked, not side by side
    assert row.locator("td").first.get_attribute("data-label")

    # The Rules tab's rows are compact instead (tests/browser/test_long_pages.py): a line of cells, then
    # the buttons, none clipped off the right edge.
    page.goto(f"/hitl/configs/{config.public_id}/rules/")
    row = page.locator("#rules tbody tr").first
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 4000, f"the Rules tab is {height} px tall on a phone"
    delete = row.get_by_role("button", name="Delete")
    delete.scroll_into_view_if_needed()
    box = delete.bounding_box()
    assert 0 <= box["x"] and box["x"] + box["width"] <= 390  # not clipped off the right edge


def test_long_unbroken_text_never_widens_a_page(new_page, alice, acme, width=390):
    config = make_config(acme, "n" * 200, pass_information_level="full")
    make_rule(config, message="m" * 400)
    contact_create(config=config, name="c" * 190, channel="none")
    publish(config, alice)
    make_approval(config, target="t" * 500, summary="x" * 600, level="full", arguments={"path": "x" * 600})
    for size in (1280, 390):
        page = new_page()
        page.set_viewport_size({"width": size, "height": 900})
        login(page, "alice@acme.test")
        for path in [
            "/hitl/approvals/",
            f"/hitl/configs/{config.public_id}/rules/",
            f"/hitl/configs/{config.public_id}/contacts/",
            "/hitl/configs/",
        ]:
            page.goto(path)
            assert page.evaluate("document.documentElement.scrollWidth") <= size, (path, size)


def test_a_phone_can_type_a_reason_and_decide(new_page, bob, acme, alice):
    config = make_config(acme, LONG_NAME, pass_information_level="full")
    make_rule(config)
    publish(config, alice)
    make_approval(config, summary=LONG_MESSAGE, level="full")
    page = new_page()
    page.set_viewport_size({"width": 390, "height": 844})
    login(page, "bob@acme.test")
    page.goto("/hitl/approvals/")

    reason = page.locator("textarea[name=reason]").first
    assert reason.bounding_box()["width"] >= 300  # not the 30 px it shrank to
    reason.fill("Checked on the phone")
    page.get_by_role("button", name="Approve").first.click()
    expect(page.locator("#decided-log")).to_contain_text("Approved by bob@acme.test")
    expect(page.locator("#decided-log")).to_contain_text("Checked on the phone")


CUT_REFERENCES = """() => {
  const refs = [...document.querySelectorAll("main code")].filter((c) => c.textContent.includes("HITL_"));
  return {count: refs.length, cut: refs.filter((c) => c.scrollWidth > c.clientWidth + 1).map((c) => c.textContent)};
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_variable_references_are_shown_whole_on_contacts_and_rules(new_page, alice, long_names, width):
    config, _ = long_names
    page = new_page()
    page.set_viewport_size({"width": width, "height": 900})
    login(page, "alice@acme.test")
    for path in (f"/hitl/configs/{config.public_id}/contacts/", f"/hitl/configs/{config.public_id}/rules/"):
        page.goto(path)
        found = page.evaluate(CUT_REFERENCES)
        assert found["count"] >= 1, path  # the contact's reference; on the Rules tab, the unset variable's warning
        assert found["cut"] == [], path
        assert page.evaluate("document.documentElement.scrollWidth") <= width, path
