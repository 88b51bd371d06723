"""A chunked body (no Content-Length) is read within the 256 KiB limit, never as empty.

Real HTTP: gunicorn — as WSGI, and with uvicorn workers as `make run` serves it — decodes the
chunks; Django's own test server cannot, so there the portal refuses with 411 rather than guessing.
"""

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from rules.models import Rule
from tests.helpers import error_of, make_config, make_token
from tests.loopback import ROOT, free_port, stop, subprocess_env, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def chunked(data: bytes, size: int = 4096) -> Iterator[bytes]:
    """A generator body: requests sends it with Transfer-Encoding: chunked and no Content-Length."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


SERVERS = {
    "wsgi": ["hitl_portal.wsgi"],
    "asgi": ["hitl_portal.asgi:application", "--worker-class", "uvicorn_worker.UvicornWorker"],
}


@pytest.fixture(params=list(SERVERS))
def gunicorn_url(request) -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), *SERVERS[request.param], "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        try:
            return requests.get(url + "/api/v1/configs", timeout=5).status_code == 401
        except requests.ConnectionError:
            return False

    try:
        wait_for(up, timeout=30, what="gunicorn to answer", every=0.1)
        yield url
    finally:
        stop(process)


def test_a_chunked_post_creates_the_rule_it_describes(gunicorn_url, acme, alice):
    config = make_config(acme)
    body = json.dumps({"kind": "mcp_server", "match": "mcp_readonly", "enabled": False}).encode()

    response = requests.post(
        f"{gunicorn_url}/api/v1/configs/{config.public_id}/rules",
        data=chunked(body, size=8),
        headers={"Authorization": f"Bearer {make_token(acme, user=alice)}", "Content-Type": "application/json"},
        timeout=30,
    )

    assert response.status_code == 201, response.text
    assert list(Rule.objects.filter(config=config).values_list("kind", "match", "enabled")) == [
        ("mcp_server", "mcp_readonly", False)
    ]


def test_a_chunked_body_over_256_kib_answers_413(gunicorn_url, acme, alice):
    config = make_config(acme)
    body = json.dumps({"kind": "delete", "match": "*", "message": "x" * (2 * 1024 * 1024)}).encode()

    response = requests.post(
        f"{gunicorn_url}/api/v1/configs/{config.public_id}/rules",
        data=chunked(body),
        headers={"Authorization": f"Bearer {make_token(acme, user=alice)}", "Content-Type": "application/json"},
        timeout=30,
    )

    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"
    assert not Rule.objects.filter(config=config).exists()


def test_a_server_that_cannot_read_chunks_refuses_with_411(live_server, acme, alice):
    config = make_config(acme)

    response = requests.post(
        f"{live_server.url}/api/v1/configs/{config.public_id}/rules",
        data=chunked(b'{"kind": "mcp_server", "match": "mcp_readonly", "enabled": false}'),
        headers={"Authorization": f"Bearer {make_token(acme, user=alice)}", "Content-Type": "application/json"},
        timeout=30,
    )

    assert response.status_code == 411
    assert error_of(response)["code"] == "length_required"
    assert not Rule.objects.filter(config=config).exists()
