"""Approve with edits in Chromium: a reviewer edits a call's arguments on the card, sees the schema's error
inline as they type, fixes it, sees the diff, and approves what they edited — with no CSP violation."""

import json

import pytest
from playwright.sync_api import expect

from approvals.models import ApprovalRequest, Status
from tests.approvals.engine_support import gate_body
from tests.approvals.test_edits import REFUND, REFUND_SCHEMA, edit_config

from .conftest import login
from .test_csp import watch_csp

QUEUE = "/hitl/approvals/"


def register(engine_api, config, **overrides) -> dict:
    body = gate_body(
        config,
        target="mcp_billing",
        operation="refund",
        arguments=REFUND,
        arguments_schema=REFUND_SCHEMA,
        **overrides,
    )
    response = engine_api.post("/api/v1/approvals", body)
    assert response.status_code == 201, response.text
    return response.json()


def edited_text(amount) -> str:
    return json.dumps({**REFUND, "amount_cents": amount}, indent=2)


@pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="600")  # the card changes only when the reviewer acts
def test_a_reviewer_edits_the_arguments_sees_the_schema_error_fixes_it_and_approves(page, bob, engine_api, acme, alice):
    config = edit_config(acme, alice)
    approval = register(engine_api, config)
    violations = watch_csp(page)
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    card = page.locator(f"#card-{approval['id']}")
    editor = card.get_by_label("Arguments to run (JSON)")
    expect(editor).to_have_value(json.dumps(REFUND, indent=2, sort_keys=True))
    check = card.locator(".edit-check")
    expect(check).to_contain_text("As proposed: nothing edited.")

    editor.fill(edited_text(500_000))  # over the schema's maximum
    expect(check.locator(".edit-errors")).to_contain_text("arguments.amount_cents")
    expect(check.locator(".edit-errors")).to_contain_text("500000 is greater than the maximum of 100000")

    editor.fill(edited_text(500_000)[:-3])  # no longer JSON at all
    expect(check.locator(".edit-errors")).to_contain_text("arguments is not valid JSON")

    editor.fill(edited_text(20_000))  # fixed
    expect(check.locator(".edit-errors")).to_have_count(0)
    expect(check).to_contain_text("proposed → approved")
    expect(check.locator(".diff-removed")).to_contain_text('"amount_cents": 50000')
    expect(check.locator(".diff-added")).to_contain_text('"amount_cents": 20000')

    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(f"#decided-{approval['id']}")).to_contain_text("Approved by bob@acme.test")
    row = ApprovalRequest.objects.get(public_id=approval["id"])
    assert row.status == Status.APPROVED
    assert (row.arguments, row.approved_arguments) == (REFUND, {**REFUND, "amount_cents": 20_000})
    decision = engine_api.get(f"/api/v1/approvals/{approval['id']}").json()["decision"]
    assert decision["edited"] is True and decision["arguments"]["amount_cents"] == 20_000

    page.goto(f"/hitl/approvals/{approval['id']}/")
    expect(page.locator("#edited")).to_contain_text("Approved with edits — proposed → approved")
    expect(page.locator("#edited .diff-added")).to_contain_text('"amount_cents": 20000')
    assert violations == []


@pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="600")
def test_the_request_page_refuses_an_approval_whose_edit_fails_the_schema_and_resets(
    page, bob, engine_api, acme, alice
):
    config = edit_config(acme, alice)
    approval = register(engine_api, config)
    login(page, "bob@acme.test")
    page.goto(f"/hitl/approvals/{approval['id']}/")
    card = page.locator(f"#card-{approval['id']}")
    editor = card.get_by_label("Arguments to run (JSON)")
    editor.fill(json.dumps({"customer_id": "T-4821"}))
    expect(card.locator(".edit-errors")).to_contain_text("arguments.amount_cents")
    card.get_by_role("button", name="Approve", exact=True).click()  # approved anyway: the server refuses it
    expect(page.get_by_text("arguments.amount_cents: 'amount_cents' is a required property")).to_be_visible()
    assert ApprovalRequest.objects.get(public_id=approval["id"]).status == Status.PENDING

    card = page.locator(f"#card-{approval['id']}")
    card.get_by_role("button", name="Reset to the proposed arguments").click()
    expect(card.get_by_label("Arguments to run (JSON)")).to_have_value(json.dumps(REFUND, indent=2, sort_keys=True))
    expect(card.locator(".edit-check")).to_contain_text("As proposed: nothing edited.")


def test_a_rule_without_edits_shows_no_editor(page, bob, engine_api, acme, alice):
    config = edit_config(acme, alice)
    approval = engine_api.post("/api/v1/approvals", gate_body(config, rule=1)).json()
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    card = page.locator(f"#card-{approval['id']}")
    expect(card.get_by_role("button", name="Approve", exact=True)).to_be_visible()
    expect(card.locator(".edit-arguments")).to_have_count(0)


@pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="1")
def test_an_edit_in_progress_survives_the_queues_refreshes(page, bob, engine_api, acme, alice):
    config = edit_config(acme, alice)
    approval = register(engine_api, config)
    login(page, "bob@acme.test")
    page.goto(QUEUE)
    card = page.locator(f"#card-{approval['id']}")
    editor = card.get_by_label("Arguments to run (JSON)")
    editor.fill(edited_text(30_000))
    expect(card.locator(".diff-added")).to_contain_text('"amount_cents": 30000')
    for _ in range(2):
        with page.expect_response(lambda r: r.url.endswith("/hitl/approvals/queue/")):
            pass
    expect(editor).to_have_value(edited_text(30_000))
    expect(card.locator(".diff-added")).to_contain_text('"amount_cents": 30000')
    card.get_by_role("button", name="Approve", exact=True).click()
    expect(page.locator(f"#decided-{approval['id']}")).to_contain_text("Approved by bob@acme.test")
    assert ApprovalRequest.objects.get(public_id=approval["id"]).approved_arguments["amount_cents"] == 30_000
