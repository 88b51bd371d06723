"""GET /api/v1/configs/{cfg}/served: the gate table an engine applies, and its HITL line."""

from rules import services as rule_services
from workspaces.services import workspace_set_plan

from ..helpers import error_of, make_config, make_rule, make_token, make_workspace, publish
from .engine_support import make_support_config, rule_ids

ACTIVE = "HITL: ACTIVE — config approval rules gate the served turn"
INERT = "HITL: inert (Free plan or no enabled rules)"


def test_it_serves_the_enabled_rules_in_order_with_the_active_line(engine_api, support):
    response = engine_api.get(f"/api/v1/configs/{support.public_id}/served")

    assert response.status_code == 200
    served = response.json()
    assert served["config_id"] == support.public_id
    assert served["version"] == 1
    assert served["hitl"] == {"state": "active", "log_line": ACTIVE}
    assert [gate["id"] for gate in served["gates"]] == rule_ids(support)[:2]  # the disabled worker rule is left out
    assert [(g["kind"], g["match"], g["point"]) for g in served["gates"]] == [
        ("delete", "*", "entry"),
        ("mcp_server", "mcp_billing", "entry"),
    ]
    assert served["gates"][1]["message"] == "Refunds move real money."
    assert served["token_caps"] == {"per_turn": 1000, "mode": "prompt"}
    assert served["pass_information_level"] == "full"


def test_it_turns_inert_at_once_when_the_workspace_moves_to_free(engine_api, acme, support):
    assert engine_api.get(f"/api/v1/configs/{support.public_id}/served").json()["hitl"]["state"] == "active"

    workspace_set_plan(workspace=acme, plan="free")

    served = engine_api.get(f"/api/v1/configs/{support.public_id}/served").json()
    assert served["hitl"] == {"state": "inert", "log_line": INERT}


def test_it_is_inert_when_the_served_version_has_no_enabled_rule(engine_api, acme, alice):
    config = make_config(acme)
    make_rule(config, enabled=False)
    publish(config, alice)

    served = engine_api.get(f"/api/v1/configs/{config.public_id}/served").json()

    assert served["hitl"] == {"state": "inert", "log_line": INERT}
    assert served["gates"] == []


def test_it_is_inert_on_the_free_plan(db, make_api):
    hobby = make_workspace("hobby", plan="free")
    config = make_config(hobby)
    make_rule(config, enabled=False)
    publish(config)
    api = make_api(make_token(hobby, engine="hobby-engine"))

    served = api.get(f"/api/v1/configs/{config.public_id}/served").json()

    assert served["hitl"]["state"] == "inert"
    assert served["hitl"]["log_line"] == INERT


def test_it_serves_the_pinned_version_and_its_rules(engine_api, alice, support):
    rule = support.rules.get(kind="mcp_server")
    rule_services.rule_update(rule=rule, enabled=False)
    publish(support, alice)
    assert [g["kind"] for g in engine_api.get(f"/api/v1/configs/{support.public_id}/served").json()["gates"]] == [
        "delete"
    ]

    rule_services.config_pin(config=support, version=1)

    served = engine_api.get(f"/api/v1/configs/{support.public_id}/served").json()
    assert served["version"] == 1
    assert [g["kind"] for g in served["gates"]] == ["delete", "mcp_server"]


def test_it_answers_404_for_a_config_never_published(engine_api, acme):
    config = make_config(acme)

    response = engine_api.get(f"/api/v1/configs/{config.public_id}/served")

    assert response.status_code == 404
    assert "has no published version: publish it first" in error_of(response)["message"]


def test_it_answers_404_for_another_workspaces_config_exactly_like_a_missing_one(engine_api, globex, charlie):
    theirs = make_support_config(globex, charlie)

    foreign = engine_api.get(f"/api/v1/configs/{theirs.public_id}/served")
    missing = engine_api.get("/api/v1/configs/cfg_doesnotexist00/served")

    assert foreign.status_code == missing.status_code == 404
    assert error_of(foreign)["code"] == "not_found"
    assert theirs.public_id in error_of(foreign)["message"]  # names what was asked, reveals nothing more


def test_it_serves_engine_keys_only(anonymous_api, bob_api, alice_api, support):
    path = f"/api/v1/configs/{support.public_id}/served"

    assert anonymous_api.get(path).status_code == 401
    assert bob_api.get(path).status_code == 403
    assert error_of(alice_api.get(path))["code"] == "forbidden"
