""" "Approve always" from a card: a proposed condition lands in the draft for an admin, never live on its own."""

import pytest

from approvals.models import ApprovalRequest
from approvals.review.always import always_suggestion
from audit.models import AuditRecord
from rules.models import ConditionProposal, Rule

from ..helpers import error_of, make_config, make_rule, publish
from .engine_support import gate_body

pytestmark = pytest.mark.django_db


@pytest.fixture
def config(acme, alice):
    config = make_config(acme, pass_information_level="full")
    make_rule(config, kind="mcp_server", match="mcp_billing", condition="arguments.amount_cents > 10000")
    publish(config, alice)
    return config


def register(engine_api, config, **overrides) -> dict:
    body = gate_body(config, target="mcp_billing", operation="refund", arguments={"amount_cents": 25_000}, **overrides)
    response = engine_api.post("/api/v1/approvals", json=body)
    assert response.status_code in (200, 201), response.json()
    return response.json()


def test_approve_always_lands_in_the_draft_only_until_an_admin_accepts_and_publishes(
    config, alice, alice_api, bob_api, engine_api
):
    first = register(engine_api, config)
    approval = ApprovalRequest.objects.get(public_id=first["id"])
    proposed = always_suggestion(approval)
    assert proposed == (
        '(arguments.amount_cents > 10000) && !(caller == "support-bot" && target == "mcp_billing" && '
        'operation == "refund")'
    )
    decided = bob_api.post(
        f"/api/v1/approvals/{first['id']}/decision", json={"decision": "approve", "propose_condition": proposed}
    )
    assert decided.status_code == 200, decided.json()
    assert decided.json()["status"] == "approved"
    proposal_id = decided.json()["proposal_id"]
    assert proposal_id.startswith("prp_")
    rule = Rule.objects.get(config=config)
    assert rule.condition == "arguments.amount_cents > 10000"  # the draft's rule is unchanged …
    assert register(engine_api, config)["status"] == "pending"  # … and nothing changed live

    [listed] = alice_api.get(f"/api/v1/configs/{config.public_id}/proposals").json()
    assert (listed["id"], listed["status"], listed["proposed_by"]) == (proposal_id, "open", "bob@acme.test")
    assert bob_api.get(f"/api/v1/configs/{config.public_id}/proposals").status_code == 403  # admins review

    accepted = alice_api.post(f"/api/v1/configs/{config.public_id}/proposals/{proposal_id}/accept")
    assert accepted.status_code == 200 and accepted.json()["status"] == "accepted"
    rule.refresh_from_db()
    assert rule.condition == proposed
    assert register(engine_api, config)["status"] == "pending"  # still the published version: not live yet
    publish(config, alice)
    assert register(engine_api, config, config_version=2)["status"] == "allowed"  # published: now it passes
    assert register(engine_api, config, config_version=2, caller="other-bot")["status"] == "pending"
    assert AuditRecord.objects.filter(object=proposal_id, action="rule.proposed").exists()


def test_a_proposal_that_would_still_ask_about_the_call_decides_nothing(config, bob_api, engine_api):
    first = register(engine_api, config)
    for condition, words in [("arguments.amount_cents > 100", "still ask"), ("nope ==", "does not compile")]:
        refused = bob_api.post(
            f"/api/v1/approvals/{first['id']}/decision", json={"decision": "approve", "propose_condition": condition}
        )
        assert refused.status_code == 400
        assert words in str(error_of(refused)["fields"]["propose_condition"])
    rejecting = bob_api.post(
        f"/api/v1/approvals/{first['id']}/decision", json={"decision": "reject", "propose_condition": "false"}
    )
    assert rejecting.status_code == 400
    assert ApprovalRequest.objects.get(public_id=first["id"]).status == "pending"
    assert not ConditionProposal.objects.exists()


def test_a_dismissed_proposal_changes_nothing(config, alice_api, bob_api, engine_api):
    first = register(engine_api, config)
    decided = bob_api.post(
        f"/api/v1/approvals/{first['id']}/decision", json={"decision": "approve", "propose_condition": "false"}
    ).json()
    dismissed = alice_api.post(f"/api/v1/configs/{config.public_id}/proposals/{decided['proposal_id']}/dismiss")
    assert dismissed.json()["status"] == "dismissed"
    again = alice_api.post(f"/api/v1/configs/{config.public_id}/proposals/{decided['proposal_id']}/accept")
    assert again.json()["status"] == "dismissed"  # resolved once
    assert Rule.objects.get(config=config).condition == "arguments.amount_cents > 10000"
