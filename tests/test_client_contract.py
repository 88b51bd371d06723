"""hitl_client's pure parts for questions, plans and approve-with-edits (docs/api.md): no portal needed.

The live turns are in test_client_questions.py and test_client_edits.py; these pin what the engine does
with each answer the contract allows, including the ones no server sends yet.
"""

import hitl_client
import pytest
from hitl_client import GatedCall, _core, _questions, answers_of, call_digest, elicitation, review_of

SERVED = {
    "config_id": "cfg_1",
    "version": 3,
    "hitl": {"state": "active"},
    "questions": True,
    "pass_information_level": "full",
    "gates": [{"id": "rul_1", "kind": "mcp_server", "match": "mcp_billing", "point": "entry", "enabled": True}],
}
REFUND = GatedCall(
    kind="mcp_server",
    target="mcp_billing",
    operation="issue_refund",
    run_id="run_1",
    thread_id="thr_1",
    call_id="call_1",
    caller="support-bot",
    arguments={"ticket_id": "T-4821", "amount_cents": 4900},
    arguments_schema={"type": "object", "properties": {"amount_cents": {"type": "integer", "maximum": 5000}}},
)
EDITED = {"ticket_id": "T-4821", "amount_cents": 2500}


def approved(arguments=None, *, edited: bool = False, digest: str | None = None) -> dict:
    proposed = call_digest(target="mcp_billing", operation="issue_refund", arguments=REFUND.arguments)
    ran = arguments if edited else REFUND.arguments
    return {
        "id": "apr_1",
        "status": "approved",
        "call_digest": proposed,
        "execution": None,
        "decision": {
            "outcome": "approved",
            "action": "resume",
            "decided_by": "bob@acme.test",
            "reason": "",
            "expired": False,
            "arguments": ran,
            "edited": edited,
            "call_digest": digest or call_digest(target="mcp_billing", operation="issue_refund", arguments=ran),
        },
    }


# --- approve with edits ---------------------------------------------------------------------


def test_an_unedited_approval_runs_the_calls_own_arguments():
    verdict = _core.settle(SERVED, approved(), REFUND)

    assert verdict.allowed and verdict.state == "approved" and not verdict.edited
    assert verdict.arguments == REFUND.arguments
    assert verdict.call_digest == approved()["call_digest"]


def test_an_edited_approval_runs_the_edited_arguments_and_says_so():
    verdict = _core.settle(SERVED, approved(EDITED, edited=True), REFUND)

    assert verdict.allowed and verdict.edited and verdict.arguments == EDITED
    assert verdict.call_digest == call_digest(target="mcp_billing", operation="issue_refund", arguments=EDITED)
    assert '"amount_cents": 2500' in verdict.message and "with edited arguments" in verdict.message


def test_an_edit_whose_digest_does_not_add_up_is_never_run():
    forged = approved(EDITED, edited=True, digest="0" * 64)

    verdict = _core.settle(SERVED, forged, REFUND)

    assert not verdict.allowed and verdict.state == "digest_mismatch"


def test_an_edit_from_a_portal_that_gives_no_decision_digest_is_never_run():
    # Without decision.call_digest the proposal's digest is all there is: it cannot vouch for an edit.
    answer = approved(EDITED, edited=True)
    del answer["decision"]["call_digest"]

    assert _core.settle(SERVED, answer, REFUND).state == "digest_mismatch"


def test_a_call_that_changed_since_it_was_approved_is_never_run():
    changed = GatedCall(**{**REFUND.__dict__, "arguments": {"ticket_id": "T-4821", "amount_cents": 1}})

    assert _core.settle(SERVED, approved(), changed).state == "digest_mismatch"


def test_the_schema_is_sent_only_beside_the_arguments():
    gate = SERVED["gates"][0]

    full = _core.gate_body(SERVED, gate, REFUND)
    summary = _core.gate_body({**SERVED, "pass_information_level": "summary"}, gate, REFUND)

    assert full["arguments_schema"] == REFUND.arguments_schema and full["arguments"] == REFUND.arguments
    assert "arguments_schema" not in summary and "arguments" not in summary


def test_the_outcome_reports_the_digest_of_what_ran():
    verdict = _core.settle(SERVED, approved(EDITED, edited=True), REFUND)
    verdict.result = "re_1"

    body = _core.outcome_of(verdict)

    assert body == {"status": "executed", "execution_id": "re_1", "call_digest": verdict.call_digest}


def test_an_execute_that_takes_nothing_is_not_handed_an_edit():
    assert _core.takes_arguments(lambda arguments: None)
    assert _core.takes_arguments(lambda *args: None)
    assert not _core.takes_arguments(lambda: None)
    assert not _core.takes_arguments(lambda *, key=None: None)

    retry = _core.edit_to_retry(_core.settle(SERVED, approved(EDITED, edited=True), REFUND))

    assert not retry.allowed and retry.state == "edit_to_retry"
    assert retry.message.endswith('{"amount_cents": 2500, "ticket_id": "T-4821"}')
    assert _core.outcome_of(retry)["status"] == "failed" and "call_digest" not in _core.outcome_of(retry)


def test_ungated_and_inert_calls_run_their_own_arguments():
    ungated = _core.not_asked(SERVED, GatedCall(**{**REFUND.__dict__, "target": "mcp_weather"}))

    assert ungated.state == "not_gated" and ungated.arguments == REFUND.arguments


# --- questions ------------------------------------------------------------------------------

ENV = {
    "id": "env",
    "prompt": "Deploy where?",
    "type": "choice",
    "options": [{"value": "staging"}, {"value": "prod"}],
    "recommended": 0,
}
NOTE = {"id": "note", "prompt": "Anything to add?", "type": "text", "required": False}


def question(status: str, **decision) -> dict:
    return {
        "id": "apr_2",
        "kind": "question",
        "status": status,
        "questions": [ENV, NOTE],
        "decision": None if status == "pending" else {"decided_by": None, "reason": "", **decision},
    }


def test_the_question_body_is_the_contracts():
    body = _questions.question_body(SERVED, [ENV], title="Deploy", run_id="r", thread_id="t", caller="bot")

    assert body == {
        "kind": "question",
        "config_id": "cfg_1",
        "config_version": 3,
        "run_id": "r",
        "thread_id": "t",
        "caller": "bot",
        "title": "Deploy",
        "questions": [ENV],
    }
    assert "rule_id" not in body


def test_answers_read_by_question_id_and_told_to_the_agent_with_their_prompts():
    answers = answers_of(question("answered", decided_by="bob@acme.test", answers={"env": "staging"}))

    assert answers.answered and answers["env"] == "staging" and "note" not in answers
    assert answers.answered_by == "bob@acme.test"
    assert answers.message.splitlines() == [
        "bob@acme.test answered:",
        "- Deploy where? (env): staging",
        "- Anything to add? (note): no answer",
    ]


def test_a_decline_and_an_expiry_are_told_apart_and_neither_chooses_the_recommended_option():
    declined = answers_of(question("declined", decided_by="bob@acme.test", reason="Ask the release manager."))
    expired = answers_of(question("expired", expired=True, reason="Nobody answered before the deadline."))

    assert declined.declined and declined.reason == "Ask the release manager."
    assert "declined to answer: Ask the release manager" in declined.message
    assert expired.expired and expired.values == {} and expired.get("env") is None
    assert expired.message.startswith("Nobody answered") and "declined" not in expired.message
    assert "staging" not in expired.message


def test_a_question_still_pending_after_the_wait_is_a_timeout():
    assert answers_of(question("pending")).state == "timeout"


def test_questions_are_not_asked_when_nobody_can_answer():
    assert _questions.questions_active(SERVED)
    assert not _questions.questions_active({**SERVED, "questions": False})
    assert not _questions.questions_active({**SERVED, "hitl": {"state": "inert"}})
    assert _questions.questions_active({k: v for k, v in SERVED.items() if k != "questions"})


def test_one_to_eight_questions():
    assert _questions.as_questions(ENV) == [ENV]
    with pytest.raises(ValueError, match="1 to 8"):
        _questions.as_questions([])
    with pytest.raises(ValueError, match="1 to 8"):
        _questions.as_questions([ENV] * 9)


# --- plans ----------------------------------------------------------------------------------


def plan(status: str, reason: str = "", **decision) -> dict:
    return {"id": "apr_3", "kind": "plan", "status": status, "decision": {"decided_by": "bob@acme.test",
                                                                          "reason": reason, **decision}}  # fmt: skip


def test_a_plan_is_approved_or_sent_back_with_the_reviewers_words():
    yes = review_of(plan("approved", action="resume"))
    back = review_of(plan("rejected", "Back up the database first.", action="revise"))

    assert yes.approved and yes.state == "approved" and yes.reviewed_by == "bob@acme.test"
    assert back.changes_requested and not back.approved and back.feedback == "Back up the database first."
    assert "asked for changes to the plan: Back up the database first" in back.message


def test_an_expired_plan_is_neither_approved_nor_sent_back():
    expired = review_of(plan("expired", "Nobody answered before the deadline.", expired=True, decided_by=None))

    assert expired.state == "expired" and not expired.approved and not expired.changes_requested
    assert expired.feedback == "" and expired.message.startswith("Nobody reviewed the plan")


def test_a_plan_longer_than_the_contract_allows_is_refused_whole():
    with pytest.raises(ValueError, match="20,000"):
        _questions.plan_body(SERVED, "x" * 20_001, title="t", run_id="r", thread_id="t", caller="c")


def test_the_new_names_are_exported():
    assert {"Answers", "PlanReview", "answers_of", "review_of", "QUESTIONS_INERT_NOTICE"} <= set(hitl_client.__all__)


# --- MCP elicitation as questions (hitl_client.elicitation) ----------------------------------

ELICIT_SCHEMA = {
    "type": "object",
    "properties": {
        "reason": {"type": "string", "enum": ["damaged", "late"], "default": "late", "description": "Why?"},
        "tier": {"type": "string", "oneOf": [{"const": "gold", "title": "Gold"}, {"const": "basic"}]},
        "amount_cents": {"type": "integer", "minimum": 1, "maximum": 10_000, "title": "Amount"},
        "notify": {"type": "boolean"},
        "tags": {"type": "array", "items": {"enum": ["vip", "repeat", "press"]}},
        "note": {"type": "string", "format": "email"},
    },
    "required": ["reason", "amount_cents"],
}


def test_an_elicitation_schema_becomes_one_question_per_field():
    title, questions, fields = elicitation.questions_of("Refund T-4821?", ELICIT_SCHEMA)
    asked = {question["id"]: question for question in questions}

    assert title == "Refund T-4821?" and list(fields.values()) == list(ELICIT_SCHEMA["properties"])
    assert asked["reason"] == {
        "id": "reason",
        "prompt": "Why?",
        "required": True,
        "type": "choice",
        "options": [{"value": "damaged"}, {"value": "late"}],
        "free_text": False,
        "recommended": 1,  # the schema's default is a suggestion, never an answer
    }
    assert asked["tier"]["options"] == [{"value": "gold", "label": "Gold"}, {"value": "basic"}]
    assert (asked["amount_cents"]["type"], asked["amount_cents"]["min"], asked["amount_cents"]["max"]) == (
        "number",
        1,
        10_000,
    )
    assert asked["amount_cents"]["prompt"] == "Amount" and asked["notify"]["type"] == "boolean"
    assert asked["tags"]["multi"] is True and asked["note"] == {
        "id": "note",
        "prompt": "note",
        "required": False,
        "type": "text",
    }


def test_the_answers_go_back_in_the_schemas_types_and_an_expiry_is_a_cancel():
    _, questions, fields = elicitation.questions_of("Refund?", ELICIT_SCHEMA)
    answered = _questions.Answers(
        "answered", "", {"reason": "late", "amount_cents": 2500.0, "notify": False, "tags": ["vip"]}
    )

    assert elicitation.result_of(answered, fields, ELICIT_SCHEMA) == {
        "action": "accept",
        "content": {"reason": "late", "amount_cents": 2500, "notify": False, "tags": ["vip"]},
    }
    assert isinstance(elicitation.result_of(answered, fields, ELICIT_SCHEMA)["content"]["amount_cents"], int)
    assert elicitation.result_of(_questions.Answers("declined", "", {}), fields, ELICIT_SCHEMA) == {"action": "decline"}
    for state in ("expired", "timeout", "inert"):
        assert elicitation.result_of(_questions.Answers(state, "", {}), fields, ELICIT_SCHEMA) == {"action": "cancel"}


def test_a_schema_the_portal_cannot_ask_is_refused_with_the_reason():
    too_many = {"type": "object", "properties": {f"f{i}": {"type": "string"} for i in range(9)}}
    nested = {"type": "object", "properties": {"address": {"type": "object"}}}

    with pytest.raises(elicitation.Unaskable, match="at most 8"):
        elicitation.questions_of("?", too_many)
    with pytest.raises(elicitation.Unaskable, match="address"):
        elicitation.questions_of("?", nested)
    with pytest.raises(elicitation.Unaskable, match="no fields"):
        elicitation.questions_of("?", {"type": "object", "properties": {}})


def test_a_long_message_is_the_title_cut_and_the_first_prompt_whole():
    message = "Please confirm. " * 20
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
    title, questions, _ = elicitation.questions_of(message, schema)

    assert len(title) == 200 and title.endswith("…")
    assert questions[0]["prompt"].startswith(message.strip())
