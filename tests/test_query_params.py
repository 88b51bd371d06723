"""Query parameters sent blank are refused on every endpoint that takes them; unknown ones are ignored.

DRF reads `?config=` as no `config` at all, so a script that built its URL from an empty variable got
every config's requests back (schemathesis' negative_data_rejection found it).
"""

import pytest
import yaml

from tests.factories import make_approval
from tests.helpers import error_of, make_config, make_token

# (path, the parameter sent blank, words of what the 400 says it takes)
BLANKS = [
    ("/api/v1/approvals", "status", "one of pending"),
    ("/api/v1/approvals", "config", "a config id (cfg_…)"),
    ("/api/v1/approvals", "kind", "one of "),
    ("/api/v1/approvals", "cursor", "the previous page's `next_cursor`"),
    ("/api/v1/approvals", "limit", "a whole number from 1 to 200"),
    ("/api/v1/approvals/{apr}", "wait", "a number from 0 to 30"),
    ("/api/v1/configs", "cursor", "the previous page's `next_cursor`"),
    ("/api/v1/configs", "limit", "a whole number from 1 to 200"),
    ("/api/v1/configs/{cfg}/rules", "cursor", "the previous page's `next_cursor`"),
    ("/api/v1/configs/{cfg}/contacts", "limit", "a whole number from 1 to 200"),
    ("/api/v1/configs/{cfg}/versions", "cursor", "the previous page's `next_cursor`"),
    ("/api/v1/grants", "active", "true or false"),
    ("/api/v1/grants", "cursor", "the previous page's `next_cursor`"),
    ("/api/v1/deliveries", "approval", "a request id (apr_…)"),
    ("/api/v1/deliveries", "contact", "a contact id (con_…)"),
    ("/api/v1/deliveries", "status", "one of pending"),
    ("/api/v1/audit", "since", "an ISO 8601 time"),
    ("/api/v1/audit", "until", "an ISO 8601 time"),
    ("/api/v1/audit", "format", "one of jsonl, csv"),
]


@pytest.fixture
def as_alice(client, acme, alice):
    """alice, an admin: every one of these endpoints answers her."""
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {make_token(acme, user=alice)}"
    return client


@pytest.fixture
def ids(acme) -> dict:
    config = make_config(acme, "Support agent")
    return {"cfg": config.public_id, "apr": make_approval(config).public_id}


@pytest.mark.parametrize(("path", "name", "takes"), BLANKS)
def test_a_blank_query_parameter_answers_400_naming_it_and_what_it_takes(as_alice, ids, path, name, takes):
    url = path.format(**ids)
    assert as_alice.get(url).status_code == 200  # the endpoint itself answers; only the blank is wrong

    response = as_alice.get(f"{url}?{name}=")

    assert response.status_code == 400, response.content
    error = error_of(response)
    assert error["code"] == "invalid"
    assert list(error["fields"]) == [name]
    assert error["fields"][name].startswith(f"{name} is blank: send {takes}")
    assert takes in error["message"] and error["message"].startswith(name)


def test_a_blank_among_repeated_values_is_refused_too(as_alice, ids):
    response = as_alice.get("/api/v1/approvals?status=pending&status=")

    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["status"]


def test_a_blank_value_is_refused_even_beside_good_ones(as_alice, ids):
    response = as_alice.get(f"/api/v1/approvals?status=pending&config={ids['cfg']}&kind=")

    assert response.status_code == 400
    assert list(error_of(response)["fields"]) == ["kind"]


def test_unknown_parameters_are_ignored_blank_or_not(as_alice, ids):
    plain = as_alice.get("/api/v1/approvals").json()

    for query in ("_=1700000000", "_=", "colour=blue&shape="):
        response = as_alice.get(f"/api/v1/approvals?{query}")
        assert response.status_code == 200, query
        assert response.json()["results"] == plain["results"]


def test_the_schema_says_string_query_parameters_are_never_blank(client):
    schema = yaml.safe_load(client.get("/api/schema/").content)
    strings = [
        (path, parameter["name"], parameter["schema"])
        for path, item in schema["paths"].items()
        for operation in item.values()
        if isinstance(operation, dict)
        for parameter in operation.get("parameters", [])
        if parameter["in"] == "query" and parameter["schema"].get("type") == "string"
    ]
    assert len(strings) >= 15  # every list's cursor, the filters, the audit's range and format
    assert [(path, name) for path, name, schema in strings if schema.get("minLength") != 1] == []
