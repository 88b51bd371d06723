"""The edge's answers are negotiated as DRF's views negotiate them: JSON for what engines send, an
`indent` when asked, 406 for a type the API does not speak, `?format=` obeyed — under the production
ASGI server, for a registration and a poll alike."""

import json

import pytest

from approvals.models import ApprovalRequest

from ..helpers import Api, error_of, make_token
from .engine_support import capped_server, gate_body

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def engine(acme):
    with capped_server() as server:
        yield Api(server.url, make_token(acme, engine="support-engine"))


@pytest.mark.parametrize("accept", [None, "*/*", "application/json"])
def test_what_engines_send_gets_compact_json(engine, support, accept):
    headers = {"Accept": accept} if accept else {}
    if accept is None:
        engine.session.headers.pop("Accept", None)

    registered = engine.post("/api/v1/approvals", json=gate_body(support), headers=headers)
    polled = engine.get(f"/api/v1/approvals/{registered.json()['id']}", headers=headers)

    for response in (registered, polled):
        assert response.headers["Content-Type"] == "application/json"
        assert response.headers["Vary"] == "Accept"
        assert b"\n" not in response.content and b'": ' not in response.content
    assert registered.status_code == 201 and polled.status_code == 200
    assert polled.json() == registered.json()


def test_an_indent_asked_for_is_given(engine, support):
    registered = engine.post(
        "/api/v1/approvals", json=gate_body(support), headers={"Accept": "application/json; indent=2"}
    )

    assert registered.status_code == 201
    assert registered.headers["Content-Type"] == "application/json; indent=2"
    assert registered.text.startswith('{\n  "id": ')
    assert json.loads(registered.text)["status"] == "pending"


def test_a_type_the_api_does_not_speak_is_refused_with_406_and_nothing_is_lost(engine, support):
    refused = engine.post("/api/v1/approvals", json=gate_body(support), headers={"Accept": "application/xml"})
    registered = engine.post("/api/v1/approvals", json=gate_body(support))
    polled = engine.get(f"/api/v1/approvals/{registered.json()['id']}", headers={"Accept": "text/html"})

    for response in (refused, polled):
        assert response.status_code == 406
        assert response.headers["Content-Type"] == "application/json"
        assert error_of(response) == {
            "code": "not_acceptable",
            "message": "The API answers in JSON only: send Accept: application/json or */*, or none.",
            "fields": {},
        }
    assert ApprovalRequest.objects.count() == 1  # the refused registration stored nothing: only the second is there


def test_a_format_the_api_does_not_have_is_not_found(engine, support):
    registered = engine.post("/api/v1/approvals", json=gate_body(support))

    polled = engine.get(f"/api/v1/approvals/{registered.json()['id']}?format=xml")

    assert polled.status_code == 404
    assert error_of(polled)["code"] == "not_found"
    assert engine.get(f"/api/v1/approvals/{registered.json()['id']}?format=json").status_code == 200
