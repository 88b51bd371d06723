"""The schema as generated clients and schemathesis read it: paging declared and enforced, bounds, tags, ids."""

import re

import pytest
import yaml

from common.fields import JsonInput
from tests.helpers import make_config, make_token

OPERATIONS = ("get", "post", "patch", "put", "delete")


@pytest.fixture
def schema(client) -> dict:
    return yaml.safe_load(client.get("/api/schema/").content)


def operations(schema: dict):
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            if method in OPERATIONS:
                yield path, method, operation


def parameter(operation: dict, name: str) -> dict:
    return next(p for p in operation["parameters"] if p["name"] == name)


def test_every_list_declares_cursor_and_a_bounded_limit(schema):
    mine = {"approvals_list", "configs_list", "configs_rules_list", "configs_contacts_list", "configs_versions_list"}
    lists = [op for _path, _method, op in operations(schema) if op["operationId"] in mine]
    assert len(lists) >= 5
    for op in lists:
        assert parameter(op, "cursor")["schema"]["type"] == "string"
        assert {k: v for k, v in parameter(op, "limit")["schema"].items() if k != "type"} == {
            "minimum": 1,
            "maximum": 200,
        }
        assert "400" in op["responses"]


def test_engine_parameters_carry_their_bounds(schema):
    register = schema["paths"]["/api/v1/approvals"]["post"]
    read = schema["paths"]["/api/v1/approvals/{apr}"]["get"]
    listing = schema["paths"]["/api/v1/approvals"]["get"]

    assert register["requestBody"]["required"] is True
    assert parameter(register, "Idempotency-Key")["schema"].items() >= {"minLength": 1, "maxLength": 255}.items()
    assert parameter(read, "wait")["schema"].items() >= {"minimum": 0, "maximum": 30}.items()
    assert parameter(listing, "config")["schema"]["pattern"] == "^cfg_[A-Za-z0-9]+$"


def test_every_body_may_earn_a_411_and_a_413_and_ids_and_tags_are_consistent(schema):
    for _path, _method, op in operations(schema):
        if "requestBody" in op:
            assert "413" in op["responses"], op["operationId"]
            # A chunked body reaching a server that cannot read it so (Django's dev server) is a 411.
            assert "411" in op["responses"], op["operationId"]
        assert not op["operationId"].startswith("v1_"), op["operationId"]
        assert op["tags"] and {tag.lower() for tag in op["tags"]} <= {
            "engines",
            "reviewers",
            "configs",
            "contacts",
            "deliveries",
            "grants",
            "audit",
            "notifications",
            "integrations",
            "operations",
            "people",
        }, (op["operationId"], op["tags"])


def test_decided_by_is_a_plain_string(schema):
    decision = schema["components"]["schemas"]["Decision"]["properties"]["decided_by"]
    assert decision["type"] == "string" and "format" not in decision


@pytest.mark.parametrize("limit", ["0", "201", "abc", "-1", "1.5"])
def test_a_limit_outside_1_to_200_answers_400(client, acme, alice, limit):
    make_config(acme)
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {make_token(acme, user=alice)}"

    for path in ("/api/v1/configs", "/api/v1/approvals"):
        response = client.get(path, {"limit": limit})
        assert response.status_code == 400, (path, limit)
        assert "limit" in response.json()["error"]["fields"]


# Words of the code, not of the API: a framework's or a module's name, a test tool, how it is built.
INTERNAL = re.compile(
    r"\bDRF\b|django|schemathesis|serializer|queryset|fast[ -](path|lane)|for speed|for the OpenAPI schema"
    r"|docs/api\.md|found it|\bwsgi|\basgi\b|psycopg|\b\w+\.\w+\(\)|Strict\w+Field|\bclean\(\)",
    re.IGNORECASE,
)


def internal_notes(schema: dict) -> list[tuple[str, str]]:
    """Every description or summary in `schema` that speaks of the code rather than of the API."""
    found = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("description", "summary", "title") and isinstance(value, str) and INTERNAL.search(value):
                    found.append((where, value))
                else:
                    walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for item in node:
                walk(item, where)

    walk(schema, "")
    return found


def test_the_schema_speaks_to_api_users_not_of_the_code(schema):
    assert internal_notes(schema) == []


def test_a_developer_note_in_a_component_is_caught():
    planted = {"components": {"schemas": {"ConfigCreateRequest": {"description": JsonInput.__doc__}}}}

    assert internal_notes(planted) == [("/components/schemas/ConfigCreateRequest", JsonInput.__doc__)]


def test_a_body_component_does_not_inherit_its_base_class_docstring(schema):
    components = schema["components"]["schemas"]

    assert "description" not in components["ConfigCreateRequest"]
    assert components["Error"]["description"].startswith("Every 4xx")
