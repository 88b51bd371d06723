"""Request bodies take JSON types as the schema declares them: 0 is not a name, "true" is not a boolean.

DRF would coerce them (`{"name": 0}` created a config called "0"); schemathesis' negative_data_rejection
found it. common.fields.JsonInput refuses them for every admin and reviewer body.
"""

import pytest
import yaml

from approvals.models import Status
from tests.factories import make_approval
from tests.helpers import error_of, make_config, make_rule


@pytest.fixture
def ids(acme) -> dict:
    config = make_config(acme, "Support agent")
    rule = make_rule(config, message="Check before deleting")
    return {"cfg": config.public_id, "rul": rule.public_id, "apr": make_approval(config).public_id}


# (method, path, body, the field named, what the 400 says it must be)
WRONG_TYPES = [
    ("post", "/api/v1/configs", {"name": 0}, "name", "a string"),
    ("patch", "/api/v1/configs/{cfg}", {"name": ["Support"]}, "name", "a string"),
    ("patch", "/api/v1/configs/{cfg}", {"pass_information_level": 1}, "pass_information_level", "a string"),
    ("patch", "/api/v1/configs/{cfg}", {"token_caps": {"per_turn": "5000"}}, "token_caps.per_turn", "an integer"),
    ("patch", "/api/v1/configs/{cfg}", {"token_caps": {"per_turn": 5000.0}}, "token_caps.per_turn", "an integer"),
    ("post", "/api/v1/configs/{cfg}/rules", {"kind": "delete", "match": 0}, "match", "a string"),
    ("post", "/api/v1/configs/{cfg}/rules", {"enabled": "true"}, "enabled", "true or false"),
    ("post", "/api/v1/configs/{cfg}/rules", {"enabled": 1}, "enabled", "true or false"),
    ("patch", "/api/v1/configs/{cfg}/rules/{rul}", {"order": "3"}, "order", "an integer"),
    ("patch", "/api/v1/configs/{cfg}/rules/{rul}", {"order": True}, "order", "an integer"),
    ("patch", "/api/v1/configs/{cfg}/rules/{rul}", {"notify": "con_x"}, "notify", "a list"),
    ("patch", "/api/v1/configs/{cfg}/rules/{rul}", {"escalate_to": [0]}, "escalate_to", "a list of strings"),
    ("post", "/api/v1/configs/{cfg}/contacts", {"name": 5, "channel": "none"}, "name", "a string"),
    ("post", "/api/v1/configs/{cfg}/publish", {"note": 1}, "note", "a string"),
    ("post", "/api/v1/configs/{cfg}/pin", {"version": "1"}, "version", "an integer"),
    ("post", "/api/v1/approvals/{apr}/decision", {"decision": "reject", "reason": 7}, "reason", "a string"),
]


@pytest.mark.parametrize(("method", "path", "body", "field", "must_be"), WRONG_TYPES)
def test_a_value_of_the_wrong_json_type_answers_400_naming_it(alice_api, ids, method, path, body, field, must_be):
    response = getattr(alice_api, method)(path.format(**ids), json=body)

    assert response.status_code == 400, response.text
    error = error_of(response)
    assert field in error["fields"], error
    assert error["fields"][field].endswith(f"must be {must_be}."), error


def test_nothing_was_changed_by_the_refused_bodies(alice_api, ids):
    for method, path, body, _field, _must_be in WRONG_TYPES:
        getattr(alice_api, method)(path.format(**ids), json=body)

    config = alice_api.get(f"/api/v1/configs/{ids['cfg']}").json()
    assert config["name"] == "Support agent" and config["token_caps"]["per_turn"] is None
    assert [rule["id"] for rule in alice_api.get(f"/api/v1/configs/{ids['cfg']}/rules").json()["results"]] == [
        ids["rul"]
    ]
    assert alice_api.get(f"/api/v1/approvals/{ids['apr']}").json()["status"] == Status.PENDING


def test_the_right_types_are_still_taken(alice_api, ids):
    assert alice_api.post("/api/v1/configs", json={"name": "Notebook"}).status_code == 201
    assert alice_api.patch(f"/api/v1/configs/{ids['cfg']}", json={"token_caps": {"per_turn": 5000}}).status_code == 200
    rule = alice_api.patch(f"/api/v1/configs/{ids['cfg']}/rules/{ids['rul']}", json={"order": 3, "enabled": False})
    assert rule.status_code == 200 and rule.json()["order"] == 3 and rule.json()["enabled"] is False


@pytest.mark.parametrize("active", ["null", "1", "yes", "True", "on"])
def test_grants_take_active_as_true_or_false_only(bob_api, active):
    response = bob_api.get("/api/v1/grants", params={"active": active})

    assert response.status_code == 400
    assert error_of(response)["fields"] == {"active": "active must be true or false."}


def test_grants_answer_active_true_and_false(bob_api):
    for active in ("true", "false"):
        assert bob_api.get("/api/v1/grants", params={"active": active}).status_code == 200


def test_a_new_contact_needs_its_channel_and_the_schema_says_so(alice_api, ids, client):

    response = alice_api.post(f"/api/v1/configs/{ids['cfg']}/contacts", json={"name": "On call"})

    assert response.status_code == 400
    assert error_of(response)["fields"] == {
        "channel": "A new contact needs its channel: email, slack, webhook, push, telegram or none."
    }
    schema = yaml.safe_load(client.get("/api/schema/").content)
    create = schema["paths"]["/api/v1/configs/{cfg}/contacts"]["post"]["requestBody"]["content"]["application/json"]
    body = schema["components"]["schemas"][create["schema"]["$ref"].rsplit("/", 1)[1]]
    assert set(body["required"]) == {"name", "channel"}
    edit = schema["paths"]["/api/v1/configs/{cfg}/contacts/{con}"]["patch"]["requestBody"]["content"]
    assert "required" not in schema["components"]["schemas"][edit["application/json"]["schema"]["$ref"].rsplit("/")[-1]]
