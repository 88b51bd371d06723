"""/api/schema/ describes what the engine endpoints really answer: real responses validated against it."""

import copy
from datetime import timedelta

import jsonschema
import pytest

from workspaces.services import workspace_set_plan

from ..helpers import travel
from ..schema import Schema
from .engine_support import decide, gate_body, token_cap_body


@pytest.fixture
def schema(anonymous_api) -> Schema:
    return Schema.served(anonymous_api)


SERVED = "/api/v1/configs/{cfg}/served"
APPROVALS = "/api/v1/approvals"
APPROVAL = "/api/v1/approvals/{apr}"
OUTCOME = "/api/v1/approvals/{apr}/outcome"


def test_it_documents_the_idempotency_key_header_and_the_wait_parameter(schema):
    register = {(p["in"], p["name"]) for p in schema.operation("post", APPROVALS).get("parameters", [])}
    read = {p["name"]: p for p in schema.operation("get", APPROVAL)["parameters"] if p["in"] == "query"}

    assert ("header", "Idempotency-Key") in register
    assert "wait" in read and read["wait"]["schema"]["type"] == "number"


def test_its_real_responses_match_the_schema(schema, engine_api, bob_api, acme, bob, support):
    served = engine_api.get(f"/api/v1/configs/{support.public_id}/served")
    schema.check_response("get", SERVED, served)
    schema.check_response("get", SERVED, engine_api.get("/api/v1/configs/cfg_doesnotexist00/served"))
    schema.check_response("get", SERVED, bob_api.get(f"/api/v1/configs/{support.public_id}/served"))

    body = gate_body(support)
    schema.check_request("post", APPROVALS, body)
    schema.check_request("post", APPROVALS, token_cap_body(support))
    created = engine_api.post(APPROVALS, json=body, headers={"Idempotency-Key": "k1"})
    assert created.status_code == 201
    schema.check_response("post", APPROVALS, created)
    replay = engine_api.post(APPROVALS, json=body, headers={"Idempotency-Key": "k1"})
    assert replay.status_code == 200
    schema.check_response("post", APPROVALS, replay)
    reused = engine_api.post(APPROVALS, json=gate_body(support, run_id="other"), headers={"Idempotency-Key": "k1"})
    assert reused.status_code == 422
    schema.check_response("post", APPROVALS, reused)
    schema.check_response("post", APPROVALS, engine_api.post(APPROVALS, json=gate_body(support, caller="x" * 501)))
    schema.check_response("post", APPROVALS, engine_api.post(APPROVALS, json=gate_body(support, config_version=9)))
    schema.check_response("post", APPROVALS, bob_api.post(APPROVALS, json=body))
    cap = engine_api.post(APPROVALS, json=token_cap_body(support))
    assert cap.status_code == 201
    schema.check_response("post", APPROVALS, cap)

    apr = created.json()["id"]
    schema.check_response("get", APPROVAL, engine_api.get(f"/api/v1/approvals/{apr}"))
    schema.check_response("get", APPROVAL, engine_api.get(f"/api/v1/approvals/{apr}", params={"wait": 99}))
    schema.check_response("get", APPROVAL, engine_api.get("/api/v1/approvals/apr_doesnotexist00"))
    schema.check_response("post", OUTCOME, engine_api.post(f"/api/v1/approvals/{apr}/outcome", json={"status": "x"}))
    schema.check_response(
        "post", OUTCOME, engine_api.post(f"/api/v1/approvals/{apr}/outcome", json={"status": "executed"})
    )  # 409: still pending

    decide(apr, bob, "approve", reason="fine")
    schema.check_response("get", APPROVAL, engine_api.get(f"/api/v1/approvals/{apr}", params={"wait": 5}))
    schema.check_request("post", OUTCOME, {"status": "executed", "execution_id": "e1"})
    reported = engine_api.post(f"/api/v1/approvals/{apr}/outcome", json={"status": "executed", "execution_id": "e1"})
    assert reported.status_code == 200
    schema.check_response("post", OUTCOME, reported)
    schema.check_response("get", APPROVAL, bob_api.get(f"/api/v1/approvals/{apr}"))

    with travel(timedelta(hours=25)):
        schema.check_response("get", APPROVAL, engine_api.get(f"/api/v1/approvals/{cap.json()['id']}"))

    workspace_set_plan(workspace=acme, plan="free")
    inert = engine_api.post(APPROVALS, json=gate_body(support, run_id="inert"))
    assert inert.json()["status"] == "inert"
    schema.check_response("post", APPROVALS, inert)
    schema.check_response("get", SERVED, engine_api.get(f"/api/v1/configs/{support.public_id}/served"))


def test_the_schema_refuses_a_response_that_breaks_it(schema, engine_api, support):
    """The check above can fail: a body missing a required field is caught."""
    served = engine_api.get(f"/api/v1/configs/{support.public_id}/served")
    broken = copy.deepcopy(served.json())
    del broken["hitl"]
    responses = schema.operation("get", SERVED)["responses"]

    with pytest.raises(jsonschema.ValidationError):
        schema.validate(responses["200"]["content"]["application/json"]["schema"], broken)
