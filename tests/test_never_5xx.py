"""No input a client can send answers 5xx: NUL bytes in paths, queries and forms; out-of-range cursors and dates."""

import base64

import pytest

from tests.factories import make_approval
from tests.helpers import make_config, make_token

# The cursor an attacker sent: "p=9999-12-31T23:59:59-23:59", a moment past year 9999 in UTC.
OUT_OF_RANGE_CURSOR = "cD05OTk5LTEyLTMxVDIzOjU5OjU5LTIzOjU5"


@pytest.fixture
def support(acme):
    config = make_config(acme, "Support agent")
    make_approval(config, status="approved")
    return config


@pytest.fixture
def as_alice(client, acme, alice):
    """alice (admin) with both a session and a bearer token, so pages and API are reachable."""
    client.force_login(alice)
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {make_token(acme, user=alice)}"
    return client


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/v1/approvals/x%00y"),
        ("post", "/api/v1/approvals/apr_%00/decision"),
        ("get", "/api/v1/configs/cfg_%00/rules"),
        ("get", "/api/v1/configs/cfg_%00/contacts/con_%00"),
        ("get", "/hitl/configs/cfg_%00/rules/"),
        ("get", "/hitl/configs/cfg_%00/contacts/"),
        ("post", "/hitl/approvals/apr_%00/decide/"),
    ],
)
def test_a_nul_byte_in_an_id_answers_404(as_alice, support, method, path):
    response = getattr(as_alice, method)(path)

    assert response.status_code == 404
    if path.startswith("/api/"):
        assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/approvals?config=cfg_%00",
        "/api/v1/approvals?status=%00",
        "/api/v1/configs?cursor=%00",
        "/hitl/approvals/history/?config=%00",
        "/hitl/approvals/history/?cursor=a%00",
    ],
)
def test_a_nul_byte_in_a_query_answers_400_saying_what_to_remove(as_alice, support, path):
    response = as_alice.get(path)

    assert response.status_code == 400
    text = response.json()["error"]["message"] if path.startswith("/api/") else response.content.decode()
    assert "NUL" in text


def test_a_nul_byte_in_a_form_answers_400(as_alice, support):
    response = as_alice.post("/workspaces/switch/", {"workspace": "acme\x00"})

    assert response.status_code == 400
    assert "NUL" in response.content.decode()


@pytest.mark.parametrize("path", ["/api/v1/approvals", "/api/v1/approvals?status=pending", "/api/v1/configs"])
def test_an_out_of_range_cursor_answers_400_naming_the_cursor(as_alice, support, path):
    separator = "&" if "?" in path else "?"

    response = as_alice.get(f"{path}{separator}cursor={OUT_OF_RANGE_CURSOR}")

    assert response.status_code == 400
    assert "cursor" in response.json()["error"]["fields"]


def test_the_history_page_ignores_an_out_of_range_cursor(as_alice, support):
    cursor = base64.urlsafe_b64encode(b"9999-12-31T23:59:59-23:59|1").decode().rstrip("=")

    response = as_alice.get(f"/hitl/approvals/history/?cursor={cursor}")

    assert response.status_code == 200


@pytest.mark.parametrize("query", ["date_to=9999-12-31", "date_from=0001-01-01&date_to=9999-12-31"])
def test_the_history_page_takes_the_widest_dates(as_alice, support, query):
    response = as_alice.get(f"/hitl/approvals/history/?{query}")

    assert response.status_code == 200
    assert "customer T-4821" in response.content.decode()
