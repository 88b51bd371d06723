"""Every /api/ answer is the JSON envelope, whatever DEBUG says, and bad input logs no traceback."""

import logging

import pytest
from django.test import Client, override_settings

pytestmark = pytest.mark.django_db


@pytest.fixture
def client():
    return Client(raise_request_exception=False)


def envelope(response, status: int, code: str) -> dict:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json", response.content[:200]
    body = response.json()
    assert body["error"]["code"] == code and set(body["error"]) == {"code", "message", "fields"}
    return body["error"]


def no_traceback(caplog) -> None:
    assert [r for r in caplog.records if r.exc_info] == []


@pytest.mark.parametrize("debug", [False, True])
def test_a_multipart_post_with_no_boundary_is_a_400_in_the_envelope(client, caplog, debug):
    caplog.set_level(logging.INFO)
    with override_settings(DEBUG=debug):
        response = client.post("/api/v1/approvals", data=b"--x\r\n", content_type="multipart/form-data")
    error = envelope(response, 400, "bad_request")
    assert "boundary" in error["message"]
    no_traceback(caplog)


def test_a_page_form_with_no_boundary_is_a_400_and_no_traceback(client, caplog):
    caplog.set_level(logging.INFO)
    response = client.post("/login/", data=b"--x\r\n", content_type="multipart/form-data")
    assert response.status_code == 400
    no_traceback(caplog)


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize("path", ["/api/v1/approvals", "/api/v1/configs", "/api/schema/"])
def test_a_host_outside_allowed_hosts_is_a_400_in_the_envelope(client, caplog, debug, path):
    caplog.set_level(logging.INFO)
    with override_settings(DEBUG=debug):
        response = client.get(path, HTTP_HOST="evil.example")
    error = envelope(response, 400, "bad_request")
    assert "Host" in error["message"]
    no_traceback(caplog)


def test_a_page_with_a_bad_host_stays_djangos_400(client):
    response = client.get("/login/", HTTP_HOST="evil.example")
    assert response.status_code == 400 and not response["Content-Type"].startswith("application/json")


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    "path", ["/api/v1/configs/cfg_x/versions/null,null", "/api/v1/no-such-thing", "/api/nothing", "/api/v1/approvals/"]
)
def test_a_path_no_route_matches_is_a_json_404_even_under_debug(client, debug, path):
    with override_settings(DEBUG=debug):
        envelope(client.get(path, HTTP_HOST="localhost"), 404, "not_found")


def test_pages_keep_their_html_404(client):
    with override_settings(DEBUG=False):
        response = client.get("/no-such-page/")
    assert response.status_code == 404 and response["Content-Type"].startswith("text/html")
