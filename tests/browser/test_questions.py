"""Answering a question and reviewing a plan in Chromium: each question type, the keyboard, safe Markdown."""

import pytest
from playwright.sync_api import expect

from approvals.models import ApprovalRequest, Status
from tests.factories import make_plan, make_question
from tests.helpers import make_config

from .conftest import login
from .test_csp import watch_csp

no_refresh = pytest.mark.server_env(APPROVALS_REFRESH_SECONDS="600")


@pytest.fixture
def support(acme, alice):
    return make_config(acme, "Migrations", pass_information_level="full")


def test_a_reviewer_answers_every_question_type_from_the_keyboard_on_the_request_page(page, bob, support):
    question = make_question(support)
    violations = watch_csp(page)
    login(page, "bob@acme.test")
    page.goto(f"/hitl/approvals/{question.public_id}/")
    form = page.locator(f"#card-{question.public_id} form")
    expect(form.get_by_text("Which environment should the migration run on?")).to_be_visible()

    page.keyboard.press("1")  # nothing focused: the first question still unanswered — env, option 1
    expect(page.locator(f"#{question.public_id}-q0-o0")).to_be_checked()
    page.locator(f"#{question.public_id}-q1-o0").check()  # multi: users, then key 3 adds invoices
    page.keyboard.press("3")
    expect(page.locator(f"#{question.public_id}-q1-o2")).to_be_checked()
    page.fill(f"#{question.public_id}-q2-t", "Friday freeze")  # text: digits typed here stay digits
    page.fill(f"#{question.public_id}-q3-n", "250")  # number
    page.locator(f"#{question.public_id}-q4-no").focus()  # yes / no: key 1 is Yes
    page.keyboard.press("1")
    expect(page.locator(f"#{question.public_id}-q4-yes")).to_be_checked()
    page.keyboard.press("Enter")  # sends the answers

    expect(page.locator("#request .decided-line")).to_contain_text("Answered by bob@acme.test")
    stored = ApprovalRequest.objects.get(pk=question.pk)
    assert stored.status == Status.ANSWERED
    assert stored.answers == {
        "env": "staging",
        "tables": ["users", "invoices"],
        "why": "Friday freeze",
        "batch": 250,
        "backup": True,
    }
    expect(page.get_by_text("Rows per batch? — 250")).to_be_visible()
    assert violations == []


def test_an_answer_out_of_range_is_named_and_the_card_stays(page, bob, support):
    question = make_question(support, questions=[{"id": "batch", "prompt": "Rows per batch?", "type": "number",
                                                  "min": 1, "max": 100}])  # fmt: skip
    login(page, "bob@acme.test")
    page.goto(f"/hitl/approvals/{question.public_id}/")
    field = page.locator(f"#{question.public_id}-q0-n")
    field.evaluate("el => el.removeAttribute('max')")  # past the browser's own check: the server's
    field.fill("500")
    field.press("Enter")

    expect(page.locator(".flash-error")).to_contain_text("answers.batch")
    expect(page.locator(f"#card-{question.public_id}")).to_be_visible()  # back on its page, still to answer
    assert ApprovalRequest.objects.get(pk=question.pk).status == Status.PENDING


@no_refresh
def test_a_plan_reads_as_markdown_on_the_tab_and_asking_for_changes_needs_a_reason(page, bob, support):
    plan = make_plan(support)
    violations = watch_csp(page)
    login(page, "bob@acme.test")
    page.goto("/hitl/approvals/")
    card = page.locator(f"#card-{plan.public_id}")

    expect(card.locator(".plan-body h1")).to_have_text("Migrate the orders table")
    expect(card.locator(".plan-body strong")).to_have_text("500")
    assert card.locator(".plan-body img").count() == 0 and card.locator(".plan-body script").count() == 0
    expect(card.locator(".plan-body")).to_contain_text('<script>alert("x")</script>')  # shown as text

    card.get_by_role("button", name="Ask for changes").click()
    expect(card.get_by_role("alert")).to_contain_text("Say what to change")
    card.locator("textarea[name=reason]").fill("Batches of 100, please")
    card.get_by_role("button", name="Ask for changes").click()

    expect(page.locator(f"#decided-{plan.public_id}")).to_contain_text("Changes asked by bob@acme.test")
    stored = ApprovalRequest.objects.get(pk=plan.pk)
    assert stored.status == Status.REJECTED and stored.decision_action == "revise"
    assert violations == []
