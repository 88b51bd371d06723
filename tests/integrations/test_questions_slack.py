"""A question and a plan in Slack, against the fake Slack on loopback: option buttons, the answers modal,
the plan modal, and the message updated on resolution."""

import pytest

from approvals.models import ApprovalRequest
from integrations import slack
from integrations.outbound import slack_message_post, slack_messages_refresh
from tests.factories import make_plan, make_question

from .conftest import BOB_SLACK, CHANNEL_REF, click, post_signed

pytestmark = pytest.mark.usefixtures("fake_slack")

ONE_CHOICE = [
    {
        "id": "env",
        "prompt": "Which environment?",
        "type": "choice",
        "options": [{"value": "staging", "label": "Staging"}, {"value": "prod", "label": "Production"}],
    }
]


def post(approval):
    return slack_message_post(approval=approval, channel=slack.channel_for(CHANNEL_REF), contact_id="con_test")


def buttons(message_blocks: list[dict]) -> list[tuple[str, str]]:
    return [
        (element["text"]["text"], element["action_id"])
        for block in message_blocks
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def texts(message_blocks: list[dict]) -> str:
    found = []
    for block in message_blocks:
        if "text" in block:
            found.append(block["text"]["text"])
        found += [item["text"] for item in block.get("fields", [])]
    return "\n".join(found)


def submit(view: dict, values: dict, *, slack_user: str = BOB_SLACK) -> dict:
    return {
        "type": "view_submission",
        "team": {"id": "T0ACME"},
        "user": {"id": slack_user, "team_id": "T0ACME"},
        "view": {
            "id": "V0002",
            "callback_id": view["callback_id"],
            "private_metadata": view["private_metadata"],
            "state": {"values": values},
        },
    }


def test_a_single_choice_is_answered_by_its_buttons_and_the_message_then_says_so(live_server, fake_slack, config):
    question = make_question(config, questions=ONE_CHOICE, title="Where to run it")
    post(question)
    [sent] = fake_slack.calls_to("chat.postMessage")
    assert buttons(sent["blocks"]) == [
        ("Decline", "hitl_q_decline"),
        ("Staging", "hitl_q_option:0"),
        ("Production", "hitl_q_option:1"),
        ("I’m on it", "hitl_claim"),
    ]
    assert "Which environment? (Staging / Production)" in texts(sent["blocks"])

    response = post_signed(live_server.url, click(question, "hitl_q_option:1", slack_user=BOB_SLACK))

    assert response.status_code == 200
    stored = ApprovalRequest.objects.get(pk=question.pk)
    assert stored.status == "answered" and stored.answers == {"env": "prod"}
    assert stored.decided_by_email == "bob@acme.test"
    assert slack_messages_refresh(approval=stored) == 1
    [update] = fake_slack.calls_to("chat.update")
    assert buttons(update["blocks"]) == []
    shown = texts(update["blocks"])
    assert "Answered by bob@acme.test" in shown and "Which environment? — Production" in shown


def test_several_questions_open_the_answers_modal_which_names_a_wrong_answer(live_server, fake_slack, config):
    question = make_question(config)
    post(question)
    [sent] = fake_slack.calls_to("chat.postMessage")
    assert buttons(sent["blocks"]) == [
        ("Decline", "hitl_q_decline"),
        ("Answer…", "hitl_q_answer"),
        ("I’m on it", "hitl_claim"),
    ]

    post_signed(live_server.url, click(question, "hitl_q_answer", slack_user=BOB_SLACK))
    [opened] = fake_slack.calls_to("views.open")
    view = opened["view"]
    assert view["callback_id"] == "hitl_answers"
    kinds = {block["block_id"]: block["element"]["type"] for block in view["blocks"] if block["type"] == "input"}
    assert kinds == {
        "q0": "radio_buttons",
        "q1": "checkboxes",
        "q1_own": "plain_text_input",
        "q2": "plain_text_input",
        "q3": "number_input",
        "q4": "radio_buttons",
    }
    values = {
        "q0": {"value": {"type": "radio_buttons", "selected_option": {"value": "0"}}},
        "q1": {"value": {"type": "checkboxes", "selected_options": [{"value": "0"}, {"value": "2"}]}},
        "q1_own": {"value": {"type": "plain_text_input", "value": None}},
        "q2": {"value": {"type": "plain_text_input", "value": None}},
        "q3": {"value": {"type": "number_input", "value": "99999"}},
        "q4": {"value": {"type": "radio_buttons", "selected_option": {"value": "true"}}},
    }

    refused = post_signed(live_server.url, submit(view, values))

    assert refused.json()["response_action"] == "errors" and "q3" in refused.json()["errors"]
    assert ApprovalRequest.objects.get(pk=question.pk).status == "pending"

    values["q3"]["value"]["value"] = "250"
    answered = post_signed(live_server.url, submit(view, values))

    assert answered.json() == {"response_action": "clear"}
    stored = ApprovalRequest.objects.get(pk=question.pk)
    assert stored.answers == {"env": "staging", "tables": ["users", "invoices"], "batch": 250, "backup": True}


def test_decline_declines_the_question(live_server, fake_slack, config):
    question = make_question(config)

    post_signed(live_server.url, click(question, "hitl_q_decline", slack_user=BOB_SLACK))

    assert ApprovalRequest.objects.get(pk=question.pk).status == "declined"


def test_a_plan_opens_a_modal_to_approve_or_ask_for_changes_with_a_reason(live_server, fake_slack, config):
    plan = make_plan(config)
    post(plan)
    [sent] = fake_slack.calls_to("chat.postMessage")
    assert buttons(sent["blocks"]) == [("Review the plan…", "hitl_q_plan"), ("I’m on it", "hitl_claim")]

    post_signed(live_server.url, click(plan, "hitl_q_plan", slack_user=BOB_SLACK))
    [opened] = fake_slack.calls_to("views.open")
    view = opened["view"]
    assert view["callback_id"] == "hitl_plan"
    assert "Migrate the orders table" in texts(view["blocks"])
    assert "&lt;script&gt;" in texts(view["blocks"])  # the plan's HTML is text, never markup
    revise = {"decision": {"value": {"type": "radio_buttons", "selected_option": {"value": "revise"}}}}

    refused = post_signed(live_server.url, submit(view, {**revise, "reason": {"value": {"value": ""}}}))
    assert refused.json()["response_action"] == "errors" and "reason" in refused.json()["errors"]

    sent_back = post_signed(live_server.url, submit(view, {**revise, "reason": {"value": {"value": "Batches of 100"}}}))

    assert sent_back.json() == {"response_action": "clear"}
    stored = ApprovalRequest.objects.get(pk=plan.pk)
    assert stored.status == "rejected" and stored.decision_action == "revise" and stored.reason == "Batches of 100"
