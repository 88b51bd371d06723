"""/api/schema/ describes what the reviewer endpoints really answer: real responses validated against it."""

import pytest

from approvals.review.decide import approval_decide
from tests.factories import make_approval, make_token_cap
from tests.helpers import make_config
from tests.schema import Schema


@pytest.fixture
def schema(anonymous_api) -> Schema:
    return Schema.served(anonymous_api)


def test_it_describes_the_list_as_it_answers(schema, bob_api, alice, acme):
    support = make_config(acme, "Support agent", pass_information_level="full")
    make_approval(support, summary="Delete it", arguments={"id": 1})
    make_token_cap(support, scope="workspace")
    approval_decide(approval=make_approval(support), user=alice, decision="reject", reason="no")
    operation = schema.document["paths"]["/api/v1/approvals"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"status", "config", "kind"}
    for query in ({}, {"status": "pending"}, {"status": "rejected"}):
        response = bob_api.get("/api/v1/approvals", params=query)
        schema.check_response("get", "/api/v1/approvals", response)
    response = bob_api.get("/api/v1/approvals", params={"status": "nope"})
    schema.check_response("get", "/api/v1/approvals", response)


def test_it_describes_the_decision_as_it_answers(schema, bob_api, engine_api, acme):
    support = make_config(acme, "Support agent")
    approval = make_approval(support)
    path = "/api/v1/approvals/{apr}/decision"
    url = f"/api/v1/approvals/{approval.public_id}/decision"
    operation = schema.document["paths"][path]["post"]
    assert set(operation["responses"]) >= {"200", "400", "403", "404"}
    for decision in ("approve", "reject"):
        response = bob_api.post(url, {"decision": decision, "reason": "why"})
        assert response.status_code == 200
        schema.check_response("post", path, response)
    for api, payload, status in (
        (bob_api, {"decision": "stop"}, 400),
        (engine_api, {"decision": "approve"}, 403),
    ):
        response = api.post(url, payload)
        assert response.status_code == status
        schema.check_response("post", path, response)
    response = bob_api.post("/api/v1/approvals/apr_missing/decision", {"decision": "approve"})
    schema.check_response("post", path, response)


def test_it_describes_votes_four_eyes_and_grants_as_it_answers(schema, bob_api, acme):
    support = make_config(acme, "Support agent")
    decision = "/api/v1/approvals/{apr}/decision"
    quorum = make_approval(support, approvals_required=2)
    voted = bob_api.post(f"/api/v1/approvals/{quorum.public_id}/decision", {"decision": "approve"})
    schema.check_response("post", decision, voted)
    assert voted.json()["approvals"][0]["by"] == "bob@acme.test"
    mine = make_approval(support, requested_by="bob@acme.test")
    refused = bob_api.post(f"/api/v1/approvals/{mine.public_id}/decision", {"decision": "approve"})
    assert refused.status_code == 403
    schema.check_response("post", decision, refused)
    grantable = make_approval(support, allow_run_grant=True)
    granted = bob_api.post(f"/api/v1/approvals/{grantable.public_id}/decision", {"decision": "approve", "grant": "run"})
    schema.check_response("post", decision, granted)
    listed = bob_api.get("/api/v1/grants", params={"active": "true"})
    assert len(listed.json()["results"]) == 1
    schema.check_response("get", "/api/v1/grants", listed)
    schema.check_response("get", "/api/v1/grants", bob_api.get("/api/v1/grants?active=maybe"))
    grant_id = granted.json()["decision"]["grant_id"]
    assert set(schema.document["paths"]["/api/v1/grants/{grt}"]["delete"]["responses"]) >= {"204", "404"}
    schema.check_response("delete", "/api/v1/grants/{grt}", bob_api.delete("/api/v1/grants/grt_nope"))
    assert bob_api.delete(f"/api/v1/grants/{grant_id}").status_code == 204
