"""The admin REST API for configs and draft rules, over real HTTP (docs/api.md, "Configs, rules, contacts")."""

import base64
from urllib.parse import urlencode

import pytest

from rules.models import Config, Rule

from ..helpers import change_draft, error_of, make_config, make_rule, publish

MISSING_MATCH = {
    "delete": "A delete rule needs its match selector: fill in Which one, or pick Any (*)",
    "mcp_server": "An MCP server rule needs its match selector: fill in Which one, or pick Any (*)",
    "cell": "A cell rule needs its match selector: fill in Which one, or pick Any (*)",
    "worker": "A worker rule needs its match selector: fill in Which one, or pick Any (*)",
}
NEVER_A_TOOL = "Name an MCP server by its mcp_… id, or pick Any (*): a rule gates a whole server, never one tool"
TOOL_SPELLINGS = ["mcp_fs/delete_file", "delete_file", "mcp_fs.delete_file"]


def test_it_creates_lists_and_reads_a_config(alice_api, acme):
    created = alice_api.post("/api/v1/configs", json={"name": "Support agent"})
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["id"].startswith("cfg_")
    assert body["name"] == "Support agent"
    assert body["pass_information_level"] == "summary"
    assert body["token_caps"] == {"per_turn": None, "mode": "prompt"}
    assert body["served_version"] is None and body["latest_version"] is None
    assert body["created_at"]

    listed = alice_api.get("/api/v1/configs").json()
    assert [c["id"] for c in listed["results"]] == [body["id"]]
    assert listed["next"] is None
    assert alice_api.get(f"/api/v1/configs/{body['id']}").json()["name"] == "Support agent"


def test_it_edits_the_drafts_settings(alice_api, acme):
    config = make_config(acme)
    response = alice_api.patch(
        f"/api/v1/configs/{config.public_id}",
        json={"name": "Renamed", "pass_information_level": "full", "token_caps": {"per_turn": 50000, "mode": "stop"}},
    )
    assert response.status_code == 200, response.text
    assert response.json()["token_caps"] == {"per_turn": 50000, "mode": "stop"}
    config.refresh_from_db()
    assert (config.name, config.pass_information_level, config.token_cap_per_turn, config.token_cap_mode) == (
        "Renamed",
        "full",
        50000,
        "stop",
    )
    cleared = alice_api.patch(f"/api/v1/configs/{config.public_id}", json={"token_caps": {"per_turn": None}})
    assert cleared.json()["token_caps"] == {"per_turn": None, "mode": "stop"}


@pytest.mark.parametrize(
    "body, field",
    [
        ({"pass_information_level": "everything"}, "pass_information_level"),
        ({"token_caps": {"mode": "pause"}}, "token_caps.mode"),
        ({"token_caps": {"per_turn": "lots"}}, "token_caps.per_turn"),
        ({"token_caps": {"per_turn": 0}}, "token_caps.per_turn"),
        ({"token_caps": {"per_turn": 2**40}}, "token_caps.per_turn"),
        ({"token_caps": "big"}, "token_caps"),
        ({"name": "x" * 201}, "name"),
        ({"name": ""}, "name"),
    ],
)
def test_it_refuses_bad_config_settings_naming_the_field(alice_api, acme, body, field):
    config = make_config(acme)
    response = alice_api.patch(f"/api/v1/configs/{config.public_id}", json=body)
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert field in error["fields"], error
    assert error["message"].startswith(field)
    config.refresh_from_db()
    assert config.name == "Support agent" and config.pass_information_level == "summary"


def test_it_refuses_bad_json_and_a_nameless_config(alice_api, acme):
    bad = alice_api.post("/api/v1/configs", data="{not json", headers={"Content-Type": "application/json"})
    assert bad.status_code == 400
    assert error_of(bad)["code"] == "bad_json"
    nameless = alice_api.post("/api/v1/configs", json={})
    assert nameless.status_code == 400
    assert "name" in error_of(nameless)["fields"]
    listed = alice_api.post("/api/v1/configs", json=["a list"])
    assert listed.status_code == 400
    assert not Config.objects.exists()


def test_it_adds_approve_every_delete_for_an_empty_body(alice_api, acme):
    config = make_config(acme)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", json={})
    assert response.status_code == 201, response.text
    rule = response.json()
    assert rule["id"].startswith("rul_")
    assert {k: rule[k] for k in ("kind", "match", "point", "enabled", "order", "ask_in", "on_reject")} == {
        "kind": "delete",
        "match": "*",
        "point": "entry",
        "enabled": True,
        "order": 10,
        "ask_in": "console",
        "on_reject": "halt",
    }


@pytest.mark.parametrize("kind", list(MISSING_MATCH))
@pytest.mark.parametrize("match", ["", None, "omitted"])
def test_it_refuses_a_rule_without_match_naming_the_kind(alice_api, acme, kind, match):
    config = make_config(acme)
    body = {"kind": kind} if match == "omitted" else {"kind": kind, "match": match}
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", json=body)
    assert response.status_code == 400, response.text
    assert error_of(response)["fields"] == {"match": MISSING_MATCH[kind]}
    assert not Rule.objects.exists()


@pytest.mark.parametrize("tool", TOOL_SPELLINGS)
def test_it_refuses_a_tool_as_mcp_server_match(alice_api, acme, tool):
    config = make_config(acme)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", json={"kind": "mcp_server", "match": tool})
    assert response.status_code == 400
    assert error_of(response)["fields"] == {"match": NEVER_A_TOOL}
    assert not Rule.objects.exists()


def test_it_accepts_an_mcp_server_id_or_any(alice_api, acme):
    config = make_config(acme)
    for match in ("mcp_billing", "*"):
        response = alice_api.post(
            f"/api/v1/configs/{config.public_id}/rules", json={"kind": "mcp_server", "match": match, "point": "exit"}
        )
        assert response.status_code == 201, response.text
    assert sorted(Rule.objects.values_list("match", flat=True)) == ["*", "mcp_billing"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"kind": "shell"}, "kind"),
        ({"point": "middle"}, "point"),
        ({"enabled": "sometimes"}, "enabled"),
        ({"order": "first"}, "order"),
        ({"order": -1}, "order"),
        ({"order": 2**40}, "order"),
        ({"message": "x" * 2001}, "message"),
        ({"match": "x" * 501}, "match"),
        ({"match": ["*"]}, "match"),
    ],
)
def test_it_refuses_bad_rule_fields_naming_the_field(alice_api, acme, body, field):
    config = make_config(acme)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", json=body)
    assert response.status_code == 400, response.text
    assert field in error_of(response)["fields"]
    assert not Rule.objects.exists()


def test_it_names_the_accepted_values_of_an_unknown_kind(alice_api, acme):
    config = make_config(acme)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", json={"kind": "shell"})
    assert "delete, mcp_server, cell, worker" in error_of(response)["fields"]["kind"]


def test_it_lists_reads_edits_and_deletes_draft_rules_in_order(alice_api, acme):
    config = make_config(acme)
    later = make_rule(config, kind="worker", match="researcher", order=20)
    first = make_rule(config, kind="cell", match="*", order=5)
    base = f"/api/v1/configs/{config.public_id}/rules"

    assert [r["id"] for r in alice_api.get(base).json()["results"]] == [first.public_id, later.public_id]
    assert alice_api.get(f"{base}/{later.public_id}").json()["match"] == "researcher"

    edited = alice_api.patch(f"{base}/{later.public_id}", json={"enabled": False, "message": "Spawns cost money."})
    assert edited.status_code == 200
    assert edited.json()["enabled"] is False and edited.json()["message"] == "Spawns cost money."

    # Switching the kind re-judges the match against the new kind.
    refused = alice_api.patch(f"{base}/{later.public_id}", json={"kind": "mcp_server"})
    assert refused.status_code == 400
    assert error_of(refused)["fields"] == {"match": NEVER_A_TOOL}
    later.refresh_from_db()
    assert later.kind == "worker"

    deleted = alice_api.delete(f"{base}/{later.public_id}")
    assert deleted.status_code == 204
    assert alice_api.get(f"{base}/{later.public_id}").status_code == 404
    assert list(Rule.objects.values_list("public_id", flat=True)) == [first.public_id]


def test_it_answers_404_for_an_unknown_rule_or_config(alice_api, acme):
    config = make_config(acme)
    assert alice_api.get(f"/api/v1/configs/{config.public_id}/rules/rul_nope").status_code == 404
    response = alice_api.get("/api/v1/configs/cfg_nope")
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def _cursor(position: str) -> str:
    return base64.b64encode(urlencode({"p": position}).encode()).decode()


@pytest.mark.parametrize(
    "path, position",
    [
        ("/contacts", "a\x00b"),
        ("/rules", "not-a-number"),
        ("/versions", "not-a-number"),
        ("", "not-a-date"),
        ("", "\x00"),
    ],
)
def test_it_answers_400_naming_the_cursor_for_a_tampered_one(alice_api, acme, path, position):
    config = make_config(acme)
    url = f"/api/v1/configs/{config.public_id}{path}" if path else "/api/v1/configs"
    response = alice_api.get(url, params={"cursor": _cursor(position)})
    assert response.status_code == 400
    assert "next_cursor" in error_of(response)["fields"]["cursor"]


def test_it_pages_through_versions_newest_first(alice_api, acme):
    config = make_config(acme)
    for _ in range(3):
        change_draft(config)
        publish(config)
    seen, url = [], f"{alice_api.base_url}/api/v1/configs/{config.public_id}/versions?limit=2"
    while url:
        page = alice_api.get(url).json()
        seen += [v["version"] for v in page["results"]]
        url = page["next"]
    assert seen == [3, 2, 1]
