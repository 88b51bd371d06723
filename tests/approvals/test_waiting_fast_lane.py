"""The long-poll's fast lane (approvals/api_wait.py): an engine asking again answers exactly as Django would.

Once the server knows an engine key (its first call), its long-polls skip Django's request handling:
the answer, the headers, a decision, a revocation, another workspace's id and a hang-up must all
come out as they do through Django's view.
"""

import socket
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import requests
from django.utils import timezone

from approvals.models import ApprovalRequest
from workspaces.models import ApiToken
from workspaces.services import token_revoke

from ..helpers import Api, make_token
from .engine_support import WAIT_CAP, capped_server, decide, make_support_config, register_gates

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def server(acme):
    with capped_server() as running:
        yield running


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


@pytest.fixture
def engine(server, acme) -> Api:
    api = Api(server.url, make_token(acme, engine="support-engine"))
    assert api.get("/api/v1/configs").status_code in (200, 403)  # the server now knows (caches) this key
    return api


def comparable(response: requests.Response) -> tuple[int, dict, bytes]:
    headers = {name.lower(): value for name, value in response.headers.items() if name.lower() not in ("date",)}
    return response.status_code, headers, response.content


def test_a_wait_that_runs_out_answers_exactly_what_a_plain_read_and_djangos_wait_answer(engine, support):
    [apr] = register_gates(engine, support, 1)
    plain = engine.get(f"/api/v1/approvals/{apr}")
    # A second query parameter is not the fast lane's shape: this one goes through Django's long-poll view.
    through_django = engine.get(f"/api/v1/approvals/{apr}?wait=0.5&x=1")
    waits = [engine.get(f"/api/v1/approvals/{apr}?wait=0.5") for _ in range(3)]
    status, headers, body = comparable(through_django)
    assert status == 200 and through_django.json()["status"] == "pending"
    assert through_django.json() == plain.json()
    for wait in waits:
        assert comparable(wait) == (status, headers, body)


def test_a_decision_reaches_an_engine_waiting_again_within_moments(engine, support, bob):
    [apr] = register_gates(engine, support, 1)
    assert engine.get(f"/api/v1/approvals/{apr}?wait=0.3").json()["status"] == "pending"
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        waiting = pool.submit(engine.get, f"/api/v1/approvals/{apr}?wait=20")
        time.sleep(0.5)
        decide(apr, bob, "approve")
        answer = waiting.result(timeout=30)
    assert answer.status_code == 200 and answer.json()["status"] == "approved"
    assert answer.json()["decision"]["decided_by"]
    assert time.monotonic() - started < 3


def test_another_workspaces_request_reads_as_missing(engine, support, server, globex):
    other = make_support_config(globex)
    [theirs] = register_gates(Api(server.url, make_token(globex, engine="their-engine")), other, 1)
    answer = engine.get(f"/api/v1/approvals/{theirs}?wait=1")
    assert answer.status_code == 404
    assert engine.get(f"/api/v1/approvals/apr_{'0' * 16}?wait=1").status_code == 404


def test_revoking_the_key_ends_a_wait_with_401_at_once(engine, support, acme):
    [apr] = register_gates(engine, support, 1)
    assert engine.get(f"/api/v1/approvals/{apr}?wait=0.3").status_code == 200
    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        waiting = pool.submit(engine.get, f"/api/v1/approvals/{apr}?wait=20")
        time.sleep(0.5)
        token_revoke(token=ApiToken.objects.get(workspace=acme, name="support-engine"))
        answer = waiting.result(timeout=30)
    assert answer.status_code == 401 and time.monotonic() - started < 5


def test_a_wait_on_a_request_expiring_sooner_ends_when_it_expires(engine, support):
    [apr] = register_gates(engine, support, 1)
    ApprovalRequest.objects.filter(public_id=apr).update(expires_at=timezone.now() + timedelta(seconds=1))
    started = time.monotonic()
    answer = engine.get(f"/api/v1/approvals/{apr}?wait=5")
    assert answer.status_code == 200 and answer.json()["status"] == "expired"
    assert time.monotonic() - started < 3  # at expiry, not after the 5 s offered


def test_the_keys_cap_and_hang_ups_hold_in_the_fast_lane(server, engine, support):
    ids = register_gates(engine, support, WAIT_CAP + 1)
    key = engine.session.headers["Authorization"]
    host = f"127.0.0.1:{server.port}"  # the Host requests sends: the same shape as the engine's own calls
    sockets = []
    for apr in ids[:WAIT_CAP]:
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.sendall(
            f"GET /api/v1/approvals/{apr}?wait=25 HTTP/1.1\r\nHost: {host}\r\nAuthorization: {key}\r\n\r\n".encode()
        )
        sockets.append(sock)
    time.sleep(1)
    refused = engine.get(f"/api/v1/approvals/{ids[WAIT_CAP]}?wait=1")
    assert refused.status_code == 429 and refused.headers["Retry-After"]
    for sock in sockets:
        sock.close()
    time.sleep(0.5)
    with ThreadPoolExecutor(WAIT_CAP) as pool:
        again = [pool.submit(engine.get, f"/api/v1/approvals/{apr}?wait=1") for apr in ids[:WAIT_CAP]]
        assert [future.result(timeout=20).status_code for future in again] == [200, 200]
