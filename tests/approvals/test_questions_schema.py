"""/api/schema/ describes questions and plans as the portal answers them: real bodies validated against it."""

from datetime import timedelta

import pytest

from workspaces.services import workspace_set_plan

from ..helpers import travel
from ..schema import Schema
from .question_support import ANSWERS, plan_body, question_body

APPROVALS = "/api/v1/approvals"
APPROVAL = "/api/v1/approvals/{apr}"
DECISION = "/api/v1/approvals/{apr}/decision"


@pytest.fixture
def schema(anonymous_api) -> Schema:
    return Schema.served(anonymous_api)


def test_questions_and_plans_match_the_schema(schema, engine_api, bob_api, acme, support):
    for body in (question_body(support), plan_body(support)):
        schema.check_request("post", APPROVALS, body)
    asked = engine_api.post(APPROVALS, json=question_body(support))
    planned = engine_api.post(APPROVALS, json=plan_body(support))
    expiring = engine_api.post(APPROVALS, json=question_body(support, run_id="r3", ttl_seconds=60))
    for response in (asked, planned, expiring):
        assert response.status_code == 201, response.text
        schema.check_response("post", APPROVALS, response)
    schema.check_response("post", APPROVALS, engine_api.post(APPROVALS, json=question_body(support, questions=[])))

    apr, plan = asked.json()["id"], planned.json()["id"]
    answer = {"decision": "answer", "answers": ANSWERS}
    schema.check_request("post", DECISION, answer)
    schema.check_response("post", DECISION, bob_api.post(f"/api/v1/approvals/{apr}/decision", json=answer))
    schema.check_response("get", APPROVAL, engine_api.get(f"/api/v1/approvals/{apr}"))
    refused = bob_api.post(f"/api/v1/approvals/{plan}/decision", json={"decision": "revise"})
    assert refused.status_code == 400
    schema.check_response("post", DECISION, refused)
    revised = {"decision": "revise", "reason": "smaller batches"}
    schema.check_response("post", DECISION, bob_api.post(f"/api/v1/approvals/{plan}/decision", json=revised))
    with travel(timedelta(minutes=2)):
        schema.check_response("get", APPROVAL, engine_api.get(f"/api/v1/approvals/{expiring.json()['id']}"))

    workspace_set_plan(workspace=acme, plan="free")
    inert = engine_api.post(APPROVALS, json=question_body(support, run_id="inert"))
    assert inert.json()["status"] == "inert"
    schema.check_response("post", APPROVALS, inert)
