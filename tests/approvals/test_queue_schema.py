"""/api/schema/ describes what the reviewer endpoints really answer: real responses validated against it."""

import jsonschema
import pytest

from approvals.services import approval_decide
from tests.helpers import make_config

from .factories import make_approval, make_token_cap


def _as_json_schema(node):
    """OpenAPI 3.0's `nullable: true` is not JSON Schema: make such a node admit null too."""
    if isinstance(node, list):
        return [_as_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _as_json_schema(value) for key, value in node.items()}
    if node.pop("nullable", False):
        if "enum" in node:
            node["enum"] = [*node["enum"], None]
        node = {"anyOf": [node, {"type": "null"}]}
    return node


def _validate(document: dict, path: str, method: str, status: int, body) -> None:
    content = document["paths"][path][method]["responses"][str(status)]["content"]["application/json"]
    schema = {**_as_json_schema(content["schema"]), "components": _as_json_schema(document["components"])}
    jsonschema.validate(body, schema)


@pytest.fixture
def document(anonymous_api) -> dict:
    response = anonymous_api.get("/api/schema/", params={"format": "json"})
    assert response.status_code == 200
    return response.json()


def test_it_describes_the_list_as_it_answers(document, bob_api, alice, acme):
    support = make_config(acme, "Support agent", pass_information_level="full")
    make_approval(support, summary="Delete it", arguments={"id": 1})
    make_token_cap(support, scope="workspace")
    approval_decide(approval=make_approval(support), user=alice, decision="reject", reason="no")
    operation = document["paths"]["/api/v1/approvals"]["get"]
    assert {p["name"] for p in operation["parameters"]} >= {"status", "config", "kind"}
    for query in ({}, {"status": "pending"}, {"status": "rejected"}):
        response = bob_api.get("/api/v1/approvals", params=query)
        _validate(document, "/api/v1/approvals", "get", 200, response.json())
    response = bob_api.get("/api/v1/approvals", params={"status": "nope"})
    _validate(document, "/api/v1/approvals", "get", 400, response.json())


def test_it_describes_the_decision_as_it_answers(document, bob_api, engine_api, acme):
    support = make_config(acme, "Support agent")
    approval = make_approval(support)
    path = "/api/v1/approvals/{apr}/decision"
    url = f"/api/v1/approvals/{approval.public_id}/decision"
    operation = document["paths"][path]["post"]
    assert set(operation["responses"]) >= {"200", "400", "403", "404"}
    for decision in ("approve", "reject"):
        response = bob_api.post(url, {"decision": decision, "reason": "why"})
        assert response.status_code == 200
        _validate(document, path, "post", 200, response.json())
    for api, payload, status in (
        (bob_api, {"decision": "stop"}, 400),
        (engine_api, {"decision": "approve"}, 403),
    ):
        response = api.post(url, payload)
        assert response.status_code == status
        _validate(document, path, "post", status, response.json())
    response = bob_api.post("/api/v1/approvals/apr_missing/decision", {"decision": "approve"})
    _validate(document, path, "post", 404, response.json())


def test_it_describes_votes_four_eyes_and_grants_as_it_answers(document, bob_api, alice_api, engine_api, acme, alice):
    support = make_config(acme, "Support agent")
    decision = "/api/v1/approvals/{apr}/decision"
    quorum = make_approval(support, approvals_required=2)
    voted = bob_api.post(f"/api/v1/approvals/{quorum.public_id}/decision", {"decision": "approve"})
    _validate(document, decision, "post", 200, voted.json())
    assert voted.json()["approvals"][0]["by"] == "bob@acme.test"
    mine = make_approval(support, requested_by="bob@acme.test")
    refused = bob_api.post(f"/api/v1/approvals/{mine.public_id}/decision", {"decision": "approve"})
    assert refused.status_code == 403
    _validate(document, decision, "post", 403, refused.json())
    grantable = make_approval(support, allow_run_grant=True)
    granted = bob_api.post(f"/api/v1/approvals/{grantable.public_id}/decision", {"decision": "approve", "grant": "run"})
    _validate(document, decision, "post", 200, granted.json())
    listed = bob_api.get("/api/v1/grants", params={"active": "true"})
    assert len(listed.json()["results"]) == 1
    _validate(document, "/api/v1/grants", "get", 200, listed.json())
    _validate(document, "/api/v1/grants", "get", 400, bob_api.get("/api/v1/grants?active=maybe").json())
    grant_id = granted.json()["decision"]["grant_id"]
    assert set(document["paths"]["/api/v1/grants/{grt}"]["delete"]["responses"]) >= {"204", "404"}
    _validate(document, "/api/v1/grants/{grt}", "delete", 404, bob_api.delete("/api/v1/grants/grt_nope").json())
    assert bob_api.delete(f"/api/v1/grants/{grant_id}").status_code == 204
