"""A chunked body (no Content-Length) is read within the 256 KiB limit, never as empty.

Real HTTP: gunicorn — as WSGI, and with uvicorn workers as `make run` serves it — decodes the
chunks. Under the ASGI server the entry reads every body itself (edge/http.py), bounded in size and time,
and the server's worker bounds the headers' time (edge/server.py).
"""

import json
import socket
import time
from collections.abc import Iterator

import pytest
import requests

from approvals.models import ApprovalRequest
from rules.models import Rule
from tests.asgi import AsgiServer
from tests.helpers import error_of, make_config, make_token

pytestmark = [pytest.mark.django_db(transaction=True)]


def chunked(data: bytes, size: int = 4096) -> Iterator[bytes]:
    """A generator body: requests sends it with Transfer-Encoding: chunked and no Content-Length."""
    for start in range(0, len(data), size):
        yield data[start : start + size]


@pytest.fixture
def gunicorn_url() -> Iterator[str]:
    """The portal as `make serve` runs it (gunicorn with the edge's uvicorn workers)."""
    with AsgiServer() as server:
        yield server.url


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


def _answer_of(sock: socket.socket) -> bytes:
    """What the server sends before it closes (or within 10 s)."""
    sock.settimeout(10)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
            if b"\r\n\r\n" in data and b'"error"' in data:
                break
    except (TimeoutError, ConnectionResetError):
        pass
    return data


@pytest.fixture
def edge_server(acme):
    with AsgiServer(HITL_BODY_TIMEOUT="1", HITL_HEADER_TIMEOUT="1") as server:
        yield server


def test_an_oversized_body_is_refused_by_its_content_length_before_a_byte_is_read(edge_server, acme):
    key = make_token(acme, engine="support-engine")
    with socket.create_connection(("127.0.0.1", edge_server.port)) as sock:
        sock.sendall(
            f"POST /api/v1/approvals HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {262 * 1024 * 1024}\r\n\r\n".encode()
        )
        answer = _answer_of(sock)  # not one byte of the body sent: the answer comes anyway
    assert answer.startswith(b"HTTP/1.1 413") and b"payload_too_large" in answer


def test_a_chunked_body_stops_being_read_at_the_limit(edge_server, acme):
    key = make_token(acme, engine="support-engine")
    sent = 0
    with socket.create_connection(("127.0.0.1", edge_server.port)) as sock:
        sock.sendall(
            f"POST /api/v1/approvals HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
        )
        chunk = b"%x\r\n%s\r\n" % (65536, b" " * 65536)
        try:
            while sent < 64 * 1024 * 1024:  # bounded: 64 MiB at most, if the server never stopped us
                sock.sendall(chunk)
                sent += 65536
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = _answer_of(sock)
    assert answer.startswith(b"HTTP/1.1 413") and b"payload_too_large" in answer
    assert sent < 32 * 1024 * 1024  # refused near 256 KiB (socket buffers aside), never the whole upload
    assert not ApprovalRequest.objects.exists()


def test_a_body_that_trickles_in_is_refused_with_408(edge_server, acme):
    key = make_token(acme, engine="support-engine")
    with socket.create_connection(("127.0.0.1", edge_server.port)) as sock:
        sock.sendall(
            f"POST /api/v1/approvals HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
            "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{".encode()
        )
        answer = _answer_of(sock)
    assert answer.startswith(b"HTTP/1.1 408") and b"request_timeout" in answer


def test_connections_that_trickle_their_headers_are_closed(edge_server):
    """Slowloris: 50 connections sending a header byte now and then are closed after the header timeout."""
    sockets = [socket.create_connection(("127.0.0.1", edge_server.port)) for _ in range(50)]
    try:
        for sock in sockets:
            sock.sendall(b"GET /login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-a: ")
        started = time.monotonic()
        closed = set()
        while len(closed) < len(sockets) and time.monotonic() - started < 15:
            for index, sock in enumerate(sockets):
                if index in closed:
                    continue
                try:
                    sock.sendall(b"a")
                    sock.settimeout(0.01)
                    if sock.recv(1) == b"":
                        closed.add(index)
                except (TimeoutError, BlockingIOError):
                    pass
                except (BrokenPipeError, ConnectionResetError):
                    closed.add(index)
            time.sleep(0.2)
        assert len(closed) == len(sockets)
        assert time.monotonic() - started < 10  # the header timeout (1 s here), not never
        assert requests.get(edge_server.url + "/login/", timeout=10).status_code == 200  # others are served
    finally:
        for sock in sockets:
            sock.close()
