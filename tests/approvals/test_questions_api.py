"""Questions and plans through the API (docs/questions.md): registration, answering, declining, a plan's
approval and revision, expiry, plan gating, isolation, who is told, and the audit log."""

import json
from datetime import timedelta

import pytest

from approvals.models import QUESTION_EXPIRED_REASON, ApprovalRequest
from audit.models import AuditRecord
from contacts.models import Delivery
from contacts.services import contact_create
from rules import services as rule_services
from workspaces.services import workspace_set_plan

from ..helpers import error_of, make_config, make_rule, publish, travel
from .question_support import ANSWERS, plan_body, question_body


def _register(api, body) -> dict:
    response = api.post("/api/v1/approvals", json=body)
    assert response.status_code == 201, response.text
    return response.json()


def _decide(api, public_id: str, body: dict):
    return api.post(f"/api/v1/approvals/{public_id}/decision", json=body)


def test_it_registers_a_question_with_its_defaults_filled_in(engine_api, support):
    approval = _register(engine_api, question_body(support))

    assert approval["kind"] == "question" and approval["status"] == "pending"
    assert approval["title"] == "Before the migration"
    assert approval["rule_id"] is None and approval["call_digest"] is None and approval["plan"] is None
    env, tables, why, batch, backup = approval["questions"]
    assert env["multi"] is False and env["free_text"] is False and env["recommended"] == 0 and env["required"]
    assert tables["multi"] is True and tables["free_text"] is True
    assert why["required"] is False
    assert (batch["min"], batch["max"]) == (1, 10000)
    assert backup["type"] == "boolean"
    stored = ApprovalRequest.objects.get()
    assert stored.kind == "question" and stored.questions == approval["questions"]


@pytest.mark.parametrize(
    ("questions", "field"),
    [
        ([], "questions"),
        ([{"id": f"q{n}", "prompt": "?", "type": "text"} for n in range(9)], "questions"),
        ([{"id": "a", "prompt": "?", "type": "colour"}], "questions.0.type"),
        ([{"id": "a", "prompt": "?", "type": "choice", "options": [{"value": "x"}]}], "questions.0.options"),
        ([{"id": "a", "prompt": "?", "type": "text"}, {"id": "a", "prompt": "?", "type": "text"}], "questions.1.id"),
        ([{"id": "x" * 65, "prompt": "?", "type": "text"}], "questions.0.id"),
        ([{"id": "a", "prompt": "", "type": "text"}], "questions.0.prompt"),
        (
            [
                {
                    "id": "a",
                    "prompt": "?",
                    "type": "choice",
                    "options": [{"value": "x"}, {"value": "y"}],
                    "recommended": 2,
                }
            ],
            "questions.0.recommended",
        ),
        ([{"id": "a", "prompt": "?", "type": "number", "min": 5, "max": 1}], "questions.0.max"),
        ([{"id": "a", "prompt": "?", "type": "text", "multi": True}], "questions.0.multi"),
        ("not a list", "questions"),
    ],
)
def test_it_refuses_a_question_that_does_not_fit_naming_the_field(engine_api, support, questions, field):
    response = engine_api.post("/api/v1/approvals", json=question_body(support, questions=questions))

    assert response.status_code == 400, response.text
    assert field in error_of(response)["fields"]
    assert not ApprovalRequest.objects.exists()


def test_it_refuses_a_missing_or_long_title_and_an_oversized_plan(engine_api, support):
    for body, field in (
        (question_body(support, title=...), "title"),
        (question_body(support, title="t" * 201), "title"),
        (plan_body(support, plan="p" * 20_001), "plan"),
        (plan_body(support, plan=...), "plan"),
    ):
        response = engine_api.post("/api/v1/approvals", json=body)
        assert response.status_code == 400, response.text
        assert field in error_of(response)["fields"]
    assert not ApprovalRequest.objects.exists()


def test_a_reviewer_answers_and_the_engine_reads_the_answers(engine_api, bob_api, support):
    approval = _register(engine_api, question_body(support))

    response = _decide(bob_api, approval["id"], {"decision": "answer", "answers": ANSWERS})

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "answered" and body["already_decided"] is False
    assert body["decision"]["outcome"] == "answered" and body["decision"]["action"] == "resume"
    assert body["decision"]["decided_by"] == "bob@acme.test" and body["decision"]["expired"] is False
    assert body["decision"]["answers"] == ANSWERS
    read = engine_api.get(f"/api/v1/approvals/{approval['id']}").json()
    assert read["status"] == "answered" and read["decision"]["answers"] == ANSWERS


def test_a_free_text_choice_takes_words_of_ones_own(engine_api, bob_api, support):
    approval = _register(engine_api, question_body(support))
    answers = {**ANSWERS, "tables": ["users", "the audit table too"], "why": "Friday freeze"}

    body = _decide(bob_api, approval["id"], {"decision": "answer", "answers": answers}).json()

    assert body["decision"]["answers"]["tables"] == ["users", "the audit table too"]
    assert body["decision"]["answers"]["why"] == "Friday freeze"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"env": "moon"}, "answers.env"),  # an unknown option where words of one's own are off
        ({"env": ["staging", "prod"]}, "answers.env"),  # a second value for a single choice
        ({"batch": 0}, "answers.batch"),  # out of range
        ({"batch": "lots"}, "answers.batch"),
        ({"backup": "maybe"}, "answers.backup"),
        ({"tables": "users"}, "answers.tables"),  # multi takes a list
        ({"nope": 1}, "answers.nope"),  # not a question of this request
    ],
)
def test_it_refuses_an_answer_that_does_not_fit_its_question(engine_api, bob_api, support, change, field):
    approval = _register(engine_api, question_body(support))

    response = _decide(bob_api, approval["id"], {"decision": "answer", "answers": {**ANSWERS, **change}})

    assert response.status_code == 400, response.text
    assert field in error_of(response)["fields"]
    assert ApprovalRequest.objects.get().status == "pending"


def test_it_refuses_a_missing_required_answer_but_not_an_optional_one(engine_api, bob_api, support):
    approval = _register(engine_api, question_body(support))
    missing = {key: value for key, value in ANSWERS.items() if key != "backup"}

    response = _decide(bob_api, approval["id"], {"decision": "answer", "answers": missing})

    assert response.status_code == 400
    assert "answers.backup" in error_of(response)["fields"]
    assert _decide(bob_api, approval["id"], {"decision": "answer", "answers": ANSWERS}).status_code == 200  # no why


def test_a_question_is_declined_in_other_words_than_an_expiry(engine_api, bob_api, support):
    approval = _register(engine_api, question_body(support))

    body = _decide(bob_api, approval["id"], {"decision": "decline", "reason": "Ask the DBA"}).json()

    assert body["status"] == "declined"
    assert body["decision"]["outcome"] == "declined" and body["decision"]["expired"] is False
    assert body["decision"]["reason"] == "Ask the DBA" and body["decision"]["answers"] is None


def test_a_question_is_decided_once(engine_api, bob_api, alice_api, support):
    approval = _register(engine_api, question_body(support))
    _decide(bob_api, approval["id"], {"decision": "answer", "answers": ANSWERS})

    late = _decide(alice_api, approval["id"], {"decision": "decline"}).json()

    assert late["already_decided"] is True and late["status"] == "answered"
    assert late["decision"]["decided_by"] == "bob@acme.test"


def test_gate_words_do_not_decide_a_question_and_question_words_do_not_decide_a_gate(engine_api, bob_api, support):
    from .engine_support import gate_body

    question = _register(engine_api, question_body(support))
    gate = _register(engine_api, gate_body(support))

    assert "decision" in error_of(_decide(bob_api, question["id"], {"decision": "approve"}))["fields"]
    assert "decision" in error_of(_decide(bob_api, gate["id"], {"decision": "answer", "answers": {}}))["fields"]


def test_an_expired_question_is_never_answered_for_anyone(engine_api, bob_api, support):
    approval = _register(engine_api, question_body(support, ttl_seconds=60))

    with travel(timedelta(minutes=2)):
        read = engine_api.get(f"/api/v1/approvals/{approval['id']}").json()
        late = _decide(bob_api, approval["id"], {"decision": "answer", "answers": ANSWERS}).json()

    assert read["status"] == "expired"
    decision = read["decision"]
    assert decision["expired"] is True and decision["decided_by"] is None
    assert decision["answers"] is None  # the recommended option was not chosen
    assert decision["outcome"] == "expired" and decision["reason"] == QUESTION_EXPIRED_REASON
    assert "nobody answered" in decision["reason"].lower() and "declin" in decision["reason"].lower()
    assert late["already_decided"] is True and late["status"] == "expired"
    stored = ApprovalRequest.objects.get()
    assert stored.status == "expired" and stored.answers is None and stored.reason == QUESTION_EXPIRED_REASON


def test_a_plan_is_approved_or_sent_back_with_a_reason(engine_api, bob_api, support):
    approved = _register(engine_api, plan_body(support))
    revised = _register(engine_api, plan_body(support, run_id="run_2"))
    assert approved["plan"].startswith("# Migrate") and approved["questions"] is None

    body = _decide(bob_api, approved["id"], {"decision": "approve"}).json()
    assert body["status"] == "approved" and body["decision"]["action"] == "resume"

    no_reason = _decide(bob_api, revised["id"], {"decision": "revise"})
    assert no_reason.status_code == 400 and "reason" in error_of(no_reason)["fields"]
    body = _decide(bob_api, revised["id"], {"decision": "revise", "reason": "Batches of 100, please"}).json()
    assert body["status"] == "rejected"
    assert body["decision"]["outcome"] == "rejected" and body["decision"]["action"] == "revise"
    assert body["decision"]["reason"] == "Batches of 100, please"


def test_an_expired_plan_says_nobody_reviewed_it(engine_api, support):
    approval = _register(engine_api, plan_body(support, ttl_seconds=60))

    with travel(timedelta(minutes=2)):
        read = engine_api.get(f"/api/v1/approvals/{approval['id']}").json()

    assert read["status"] == "expired" and read["decision"]["expired"] is True
    assert read["decision"]["action"] == "halt" and "nobody reviewed" in read["decision"]["reason"].lower()


def test_quorum_and_four_eyes_do_not_apply_to_a_question(acme, alice, bob, engine_api, bob_api):
    config = make_config(acme, pass_information_level="full")
    make_rule(config, approvals_required=3, self_approval=False)
    publish(config, alice)

    approval = _register(engine_api, question_body(config, requested_by="bob@acme.test"))
    body = _decide(bob_api, approval["id"], {"decision": "answer", "answers": ANSWERS}).json()

    assert body["status"] == "answered" and body["approvals_required"] == 1


def test_it_is_inert_on_free_and_without_enabled_rules_and_says_to_go_on(engine_api, acme, alice, support):
    workspace_set_plan(workspace=acme, plan="free")

    for body in (question_body(support), plan_body(support)):
        response = engine_api.post("/api/v1/approvals", json=body)
        assert response.status_code == 200, response.text
        answer = response.json()
        assert answer["status"] == "inert"
        assert "nobody can answer" in answer["notice"] and "best assumption" in answer["notice"]
    assert not ApprovalRequest.objects.exists()

    workspace_set_plan(workspace=acme, plan="pro")
    bare = make_config(acme, name="No rules")
    publish(bare, alice)
    assert engine_api.post("/api/v1/approvals", json=question_body(bare)).json()["status"] == "inert"


def test_served_says_whether_questions_are_on(engine_api, acme, support):
    served = engine_api.get(f"/api/v1/configs/{support.public_id}/served").json()
    assert served["questions"] is True

    workspace_set_plan(workspace=acme, plan="free")
    served = engine_api.get(f"/api/v1/configs/{support.public_id}/served").json()
    assert served["questions"] is False


def test_another_workspaces_question_answers_404(engine_api, charlie_api, support):
    approval = _register(engine_api, question_body(support))

    response = _decide(charlie_api, approval["id"], {"decision": "answer", "answers": ANSWERS})

    assert response.status_code == 404
    assert charlie_api.get(f"/api/v1/approvals/{approval['id']}").status_code == 404
    assert ApprovalRequest.objects.get().status == "pending"


def test_an_engine_key_may_not_answer(engine_api, support):
    approval = _register(engine_api, question_body(support))

    assert _decide(engine_api, approval["id"], {"decision": "answer", "answers": ANSWERS}).status_code == 403


def test_the_questions_notify_contacts_are_told_through_the_outbox(engine_api, bob_api, alice_api, support):
    leads = contact_create(config=support, name="Leads", channel="email", channel_ref="${HITL_ACME_LEADS_EMAIL}")
    other = contact_create(config=support, name="Other", channel="email", channel_ref="${HITL_ACME_OTHER_EMAIL}")
    response = alice_api.patch(f"/api/v1/configs/{support.public_id}", json={"questions_notify": [leads.public_id]})
    assert response.status_code == 200, response.text
    assert response.json()["questions_notify"] == [leads.public_id]
    refused = alice_api.patch(f"/api/v1/configs/{support.public_id}", json={"questions_notify": ["con_nope"]})
    assert refused.status_code == 400 and "questions_notify" in error_of(refused)["fields"]

    # v1 froze nobody: its questions tell nobody. v2 freezes Leads.
    before = _register(engine_api, question_body(support))
    assert not Delivery.objects.filter(approval__public_id=before["id"]).exists()
    version = alice_api.post(f"/api/v1/configs/{support.public_id}/publish", json={}).json()
    assert version["questions_notify"] == [leads.public_id]

    approval = _register(engine_api, question_body(support, config_version=2))
    _decide(bob_api, approval["id"], {"decision": "answer", "answers": ANSWERS})

    events = set(Delivery.objects.filter(approval__public_id=approval["id"]).values_list("contact_public_id", "event"))
    assert (leads.public_id, "requested") in events and (leads.public_id, "decided") in events
    assert not any(contact == other.public_id for contact, _ in events)


def test_a_contact_named_in_questions_notify_is_not_deleted(alice_api, support):
    leads = contact_create(config=support, name="Leads", channel="email", channel_ref="${HITL_ACME_LEADS_EMAIL}")
    rule_services.config_update(config=support, questions_notify=[leads.public_id])

    response = alice_api.delete(f"/api/v1/configs/{support.public_id}/contacts/{leads.public_id}")

    assert response.status_code == 409 and "questions_notify" in error_of(response)["message"]


def test_the_audit_log_records_asked_answered_declined_approved_and_revised(engine_api, bob_api, support):
    answered = _register(engine_api, question_body(support))
    declined = _register(engine_api, question_body(support, run_id="r2"))
    approved = _register(engine_api, plan_body(support))
    revised = _register(engine_api, plan_body(support, run_id="r2"))
    _decide(bob_api, answered["id"], {"decision": "answer", "answers": ANSWERS})
    _decide(bob_api, declined["id"], {"decision": "decline"})
    _decide(bob_api, approved["id"], {"decision": "approve"})
    _decide(bob_api, revised["id"], {"decision": "revise", "reason": "smaller batches"})

    actions = {(r.object, r.action) for r in AuditRecord.objects.all()}
    assert {(answered["id"], "question.asked"), (answered["id"], "question.answered")} <= actions
    assert (declined["id"], "question.declined") in actions
    assert {(approved["id"], "plan.asked"), (approved["id"], "plan.approved")} <= actions
    assert (revised["id"], "plan.revised") in actions
    record = AuditRecord.objects.get(object=answered["id"], action="question.answered")
    assert record.actor == "bob@acme.test" and record.data["answers"] == ANSWERS


def test_history_lists_answered_and_declined_questions(engine_api, bob_api, support):
    answered = _register(engine_api, question_body(support))
    _decide(bob_api, answered["id"], {"decision": "answer", "answers": ANSWERS})

    listed = bob_api.get("/api/v1/approvals?status=answered").json()["results"]
    assert [row["id"] for row in listed] == [answered["id"]]
    assert bob_api.get("/api/v1/approvals?kind=question").json()["results"][0]["id"] == answered["id"]


@pytest.mark.live_http  # through the edge, as `make serve` runs it: registration and the long-poll
def test_a_waiting_engine_gets_the_answer_when_a_reviewer_answers(engine_api, bob_api, support):
    import threading

    approval = _register(engine_api, question_body(support))
    got: dict = {}

    def long_poll() -> None:
        got["approval"] = engine_api.get(f"/api/v1/approvals/{approval['id']}", params={"wait": 20}).json()

    poller = threading.Thread(target=long_poll)
    poller.start()
    answered = _decide(bob_api, approval["id"], {"decision": "answer", "answers": ANSWERS})
    poller.join(timeout=25)

    assert answered.status_code == 200, answered.text
    assert got["approval"]["status"] == "answered" and got["approval"]["decision"]["answers"] == ANSWERS


def test_a_plan_takes_no_run_grant(engine_api, bob_api, support):
    approval = _register(engine_api, plan_body(support))

    response = _decide(bob_api, approval["id"], {"decision": "approve", "grant": "run"})

    assert response.status_code == 400 and "grant" in error_of(response)["fields"]
    assert ApprovalRequest.objects.get().status == "pending"


@pytest.mark.parametrize("where", ["title", "prompt", "option", "answer"])
def test_a_lone_surrogate_is_a_400_not_a_500(engine_api, bob_api, support, where):
    bad = "caf\ud800"
    questions = [{"id": "q", "prompt": bad if where == "prompt" else "?", "type": "choice",
                  "options": [{"value": bad if where == "option" else "a"}, {"value": "b"}]}]  # fmt: skip
    body = question_body(support, questions=questions, title=bad if where == "title" else "T")
    raw = json.dumps(body)  # \ud800 travels as its JSON escape, as a client may send it

    response = engine_api.post("/api/v1/approvals", data=raw, headers={"Content-Type": "application/json"})

    if where == "answer":
        assert response.status_code == 201, response.text
        answer = json.dumps({"decision": "answer", "answers": {"q": bad}})
        response = bob_api.post(
            f"/api/v1/approvals/{response.json()['id']}/decision",
            data=answer,
            headers={"Content-Type": "application/json"},
        )
    assert response.status_code == 400, response.text


def test_an_unknown_answer_key_with_a_lone_surrogate_is_named_escaped(engine_api, bob_api, support):
    approval = _register(engine_api, question_body(support))
    answer = json.dumps({"decision": "answer", "answers": {**ANSWERS, "x\ud800": 1}})

    response = bob_api.post(
        f"/api/v1/approvals/{approval['id']}/decision", data=answer, headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 400
    assert "answers.x\\ud800" in error_of(response)["fields"]


def test_answers_may_be_null_as_the_schema_says(engine_api, bob_api, support):
    approval = _register(engine_api, question_body(support))

    response = _decide(bob_api, approval["id"], {"decision": "decline", "answers": None, "reason": "Not now"})

    assert response.status_code == 200, response.text
    assert response.json()["status"] == "declined"
