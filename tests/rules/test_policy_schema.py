"""The policy endpoints' real answers match the served OpenAPI schema (API.md, "Policy")."""

import datetime

import pytest
from django.utils import timezone

from ..approvals.engine_support import gate_body
from ..helpers import make_config, make_rule, publish
from ..schema import Schema

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(anonymous_api) -> Schema:
    return Schema.served(anonymous_api)


def test_the_policy_answers_are_the_documented_ones(schema, acme, alice, alice_api, bob_api, engine_api):
    config = make_config(acme, pass_information_level="full")
    gated = make_rule(config, kind="mcp_server", match="mcp_billing", condition="arguments.amount_cents > 10000")
    shadow = make_rule(config, kind="worker", match="*", mode="shadow", order=20)
    publish(config, alice)

    allowed = engine_api.post(
        "/api/v1/approvals", json=gate_body(config, rule_id=gated.public_id, arguments={"amount_cents": 1})
    )
    schema.check_response("post", "/api/v1/approvals", allowed)
    shadowed = engine_api.post("/api/v1/approvals", json=gate_body(config, rule_id=shadow.public_id))
    schema.check_response("post", "/api/v1/approvals", shadowed)
    failed = engine_api.post("/api/v1/approvals", json=gate_body(config, rule_id=gated.public_id, arguments={}))
    assert failed.status_code == 201
    schema.check_response("post", "/api/v1/approvals", failed)

    window_body = {
        "scope": "rule",
        "rule_id": gated.public_id,
        "expires_at": (timezone.now() + datetime.timedelta(hours=1)).isoformat(),
        "reason": "Month end",
    }
    schema.check_request("post", "/api/v1/grants", window_body)
    window = alice_api.post("/api/v1/grants", json=window_body)
    schema.check_response("post", "/api/v1/grants", window)
    schema.check_response("get", "/api/v1/grants", alice_api.get("/api/v1/grants"))

    path = "/api/v1/configs/{cfg}/simulate"
    simulated = alice_api.post(f"/api/v1/configs/{config.public_id}/simulate", json={"days": 7})
    schema.check_request("post", path, {"days": 7})
    schema.check_response("post", path, simulated)
    refused = alice_api.post(f"/api/v1/configs/{config.public_id}/simulate", json={"days": 0})
    schema.check_response("post", path, refused)

    pending = failed.json()["id"]
    decided = bob_api.post(
        f"/api/v1/approvals/{pending}/decision", json={"decision": "approve", "propose_condition": "false"}
    )
    schema.check_response("post", "/api/v1/approvals/{apr}/decision", decided)
    proposals = alice_api.get(f"/api/v1/configs/{config.public_id}/proposals")
    schema.check_response("get", "/api/v1/configs/{cfg}/proposals", proposals)
    resolved = alice_api.post(f"/api/v1/configs/{config.public_id}/proposals/{decided.json()['proposal_id']}/accept")
    schema.check_response("post", "/api/v1/configs/{cfg}/proposals/{prp}/{action}", resolved)
