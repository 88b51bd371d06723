"""A question and a plan on the Approvals tab and the request page: forms, safe Markdown, answering by form,
and the CLI's `hitl answer` / `hitl decline`."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from approvals.models import ApprovalRequest, Status
from tests.factories import make_plan, make_question
from tests.helpers import make_config

QUEUE = "/hitl/approvals/"


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent", pass_information_level="full")


def _decide_url(approval) -> str:
    return f"/hitl/approvals/{approval.public_id}/decide/"


def test_the_tab_draws_a_question_as_a_form_of_each_type(client, bob, support):
    question = make_question(support)
    client.force_login(bob)

    html = client.get(QUEUE).content.decode()

    assert "Before the migration" in html
    assert f'type="radio" id="{question.public_id}-q0-o0" name="answer-0" value="staging"' in html
    assert 'type="checkbox"' in html and 'name="answer-1"' in html  # multi
    assert 'name="answer-1-own"' in html  # words of one's own
    assert "<textarea" in html and 'name="answer-2"' in html  # text
    assert 'type="number"' in html and 'min="1"' in html and 'max="10000"' in html
    assert 'value="true"' in html and 'value="false"' in html  # yes / no
    assert "recommended" in html
    assert 'value="answer"' in html and 'value="decline"' in html
    assert "js/questions.js" in html


def test_a_plan_is_shown_as_markdown_without_its_html_or_remote_images(client, bob, support):
    plan = make_plan(support)
    client.force_login(bob)

    html = client.get(f"/hitl/approvals/{plan.public_id}/").content.decode()

    assert "<h1>Migrate the orders table</h1>" in html and "<strong>500</strong>" in html
    assert "<script>alert" not in html and "&lt;script&gt;alert" in html
    assert "evil.example" not in html.split("plan-body", 1)[1].split("</div>", 1)[0].replace("[tracking pixel]", "")
    assert "<img" not in html
    assert 'value="revise"' in html and "Ask for changes" in html and 'value="approve"' in html


def test_answering_by_form_records_the_answers_of_every_type(client, bob, support):
    question = make_question(support)
    client.force_login(bob)

    response = client.post(
        _decide_url(question),
        {
            "decision": "answer",
            "answer-0": "staging",
            "answer-1": ["users", "orders"],
            "answer-1-own": "audit",
            "answer-2": "",
            "answer-3": "250",
            "answer-4": "false",
            "next": f"/hitl/approvals/{question.public_id}/",
        },
    )

    assert response.status_code == 302
    stored = ApprovalRequest.objects.get(pk=question.pk)
    assert stored.status == Status.ANSWERED
    assert stored.answers == {"env": "staging", "tables": ["users", "orders", "audit"], "batch": 250, "backup": False}
    page = client.get(f"/hitl/approvals/{question.public_id}/").content.decode()
    assert "Answered by bob@acme.test" in page and "Rows per batch? — 250" in page


def test_a_wrong_answer_stays_on_the_card_naming_the_question(client, bob, support):
    question = make_question(support)
    client.force_login(bob)

    response = client.post(
        _decide_url(question),
        {"decision": "answer", "answer-0": "staging", "answer-1": "users", "answer-3": "0", "answer-4": "true"},
        HTTP_HX_REQUEST="true",
    )

    assert response.status_code == 200
    assert "answers.batch" in response.content.decode() or "out of range" in response.content.decode()
    assert ApprovalRequest.objects.get(pk=question.pk).status == Status.PENDING


def test_asking_for_changes_needs_a_reason(client, bob, support):
    plan = make_plan(support)
    client.force_login(bob)

    refused = client.post(_decide_url(plan), {"decision": "revise"}, HTTP_HX_REQUEST="true")
    assert "Say what to change" in refused.content.decode()
    client.post(_decide_url(plan), {"decision": "revise", "reason": "Smaller batches"}, HTTP_HX_REQUEST="true")

    stored = ApprovalRequest.objects.get(pk=plan.pk)
    assert stored.status == Status.REJECTED and stored.decision_action == "revise"


def hitl(*args) -> str:
    out = StringIO()
    call_command("hitl", *args, stdout=out)
    return out.getvalue()


def test_the_cli_answers_a_question(support, bob):
    question = make_question(support)

    out = hitl(
        "answer", question.public_id, "--as", "bob@acme.test",
        "--set", "env=staging", "--set", "tables=users", "--set", "tables=orders",
        "--set", "batch=500", "--set", "backup=yes",
    )  # fmt: skip

    assert "Answered by bob@acme.test" in out and "Take a backup first? — Yes" in out
    stored = ApprovalRequest.objects.get(pk=question.pk)
    assert stored.answers == {"env": "staging", "tables": ["users", "orders"], "batch": 500, "backup": True}


def test_the_cli_names_a_wrong_answer_and_declines(support, bob):
    question = make_question(support)

    with pytest.raises(CommandError, match="answers.batch"):
        hitl("answer", question.public_id, "--as", "bob@acme.test", "--set", "env=staging", "--set", "tables=users",
             "--set", "batch=99999", "--set", "backup=no")  # fmt: skip
    with pytest.raises(CommandError, match="answers.nope"):
        hitl("answer", question.public_id, "--as", "bob@acme.test", "--set", "nope=1")

    out = hitl("decline", question.public_id, "--as", "bob@acme.test", "--reason", "Ask the DBA")

    assert "Declined by bob@acme.test" in out
    assert ApprovalRequest.objects.get(pk=question.pk).status == Status.DECLINED


def test_the_cli_approves_a_plan_and_asks_for_changes_with_deny(support, bob):
    approved, revised = make_plan(support), make_plan(support, run_id="r2")

    hitl("approve", approved.public_id, "--as", "bob@acme.test")
    hitl("deny", revised.public_id, "--as", "bob@acme.test", "--reason", "Smaller batches")

    assert ApprovalRequest.objects.get(pk=approved.pk).status == Status.APPROVED
    assert ApprovalRequest.objects.get(pk=revised.pk).decision_action == "revise"


def test_history_shows_a_questions_answers_and_a_plans_fate(client, bob, support):
    from approvals.review.decide import approval_decide

    from .question_support import ANSWERS

    question, plan = make_question(support), make_plan(support)
    approval_decide(approval=question, user=bob, decision="answer", answers=ANSWERS)
    approval_decide(approval=plan, user=bob, decision="revise", reason="Smaller batches")
    client.force_login(bob)

    html = client.get("/hitl/approvals/history/").content.decode()

    assert "Before the migration" in html and "Which environment should the migration run on? — Staging" in html
    assert "Changes asked" in html and "sent back to revise" in html
