"""Long-polls under the production ASGI server: the per-key cap, revocation, hang-ups, two connections."""

import socket
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
import pytest
import requests
from django.contrib.auth import get_user_model
from django.test import Client

from edge.hub import APPLICATION_NAME
from workspaces.models import ApiToken
from workspaces.services import token_revoke, workspace_set_plan

from ..helpers import Api, error_of, make_token
from ..loopback import database_url
from .engine_support import WAIT_CAP, capped_server, decide, register_gates

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def server(acme):
    with capped_server() as running:
        yield running


def timed_get(api: Api, path: str) -> tuple[int, float, dict]:
    t0 = time.monotonic()
    response = api.get(path)
    return response.status_code, time.monotonic() - t0, response.json()


def test_a_waiting_engine_hears_of_its_decision_within_moments(engine, support, bob):
    [apr] = register_gates(engine, support, 1)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(timed_get, engine, f"/api/v1/approvals/{apr}?wait=20")
        time.sleep(0.5)
        decide(apr, bob, "approve")
        decided_at = time.monotonic()
        status, _, body = waiting.result(timeout=30)
    assert status == 200 and body["status"] == "approved"
    assert time.monotonic() - decided_at < 2  # not the 20 s the engine offered to wait


def test_one_wait_more_than_the_keys_cap_answers_429_too_many_waits_with_retry_after(server, engine, support, acme):
    ids = register_gates(engine, support, WAIT_CAP + 1)
    other_engine = Api(server.url, make_token(acme, engine="billing-engine"))
    with ThreadPoolExecutor(WAIT_CAP) as pool:
        held = [pool.submit(engine.get, f"/api/v1/approvals/{apr}?wait=4") for apr in ids[:WAIT_CAP]]
        time.sleep(1)
        refused = engine.get(f"/api/v1/approvals/{ids[WAIT_CAP]}?wait=4")
        assert refused.status_code == 429
        assert error_of(refused)["code"] == "too_many_waits"
        assert "HITL_MAX_WAITS_PER_KEY" in error_of(refused)["message"]
        assert int(refused.headers["Retry-After"]) > 0
        # The cap is the key's: another engine key of the workspace still waits, and a plain poll still reads.
        assert other_engine.get(f"/api/v1/approvals/{ids[WAIT_CAP]}?wait=0.5").status_code == 200
        assert engine.get(f"/api/v1/approvals/{ids[WAIT_CAP]}").status_code == 200
        assert [future.result(timeout=20).status_code for future in held] == [200, 200]
    # Answered waits give their places back.
    assert engine.get(f"/api/v1/approvals/{ids[WAIT_CAP]}?wait=0.5").json()["status"] == "pending"


def test_revoking_a_key_ends_its_waits_with_401_at_once(engine, support, acme):
    ids = register_gates(engine, support, 2)
    key = ApiToken.objects.get(workspace=acme, name="support-engine")
    with ThreadPoolExecutor(2) as pool:
        waits = [pool.submit(timed_get, engine, f"/api/v1/approvals/{apr}?wait=20") for apr in ids]
        time.sleep(1)
        token_revoke(token=key)
        answers = [wait.result(timeout=30) for wait in waits]
    for status, seconds, body in answers:
        assert status == 401
        assert body["error"]["code"] == "authentication_failed"
        assert seconds < 5  # at once, not at the end of the 20 s wait


def test_deactivating_a_person_ends_their_tokens_waits_with_401_at_once(server, engine, support, acme, bob):
    [apr] = register_gates(engine, support, 1)
    bob_api = Api(server.url, make_token(acme, user=bob))
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(timed_get, bob_api, f"/api/v1/approvals/{apr}?wait=20")
        time.sleep(1)
        get_user_model().objects.filter(pk=bob.pk).update(is_active=False)
        status, seconds, body = waiting.result(timeout=30)
    assert status == 401 and seconds < 5
    assert "deactivated" in body["error"]["message"]


def test_a_client_that_hangs_up_gives_its_place_back_at_once(server, engine, support, acme):
    ids = register_gates(engine, support, WAIT_CAP + 1)
    raw_key = engine.session.headers["Authorization"]
    sockets = []
    for apr in ids[:WAIT_CAP]:
        sock = socket.create_connection(("127.0.0.1", server.port))
        request = f"GET /api/v1/approvals/{apr}?wait=25 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: {raw_key}\r\n\r\n"
        sock.sendall(request.encode())
        sockets.append(sock)
    time.sleep(1)
    assert engine.get(f"/api/v1/approvals/{ids[WAIT_CAP]}?wait=1").status_code == 429  # both places are taken
    for sock in sockets:
        sock.close()  # the engines hang up without a word
    time.sleep(0.5)
    # Their waits are gone: the key may wait WAIT_CAP times again, long before the 25 s would have passed.
    with ThreadPoolExecutor(WAIT_CAP) as pool:
        again = [pool.submit(engine.get, f"/api/v1/approvals/{apr}?wait=1") for apr in ids[:WAIT_CAP]]
        assert [future.result(timeout=20).status_code for future in again] == [200, 200]


def test_a_server_process_holds_two_connections_for_all_its_waiters(engine, support, acme, bob):
    ids = register_gates(engine, support, WAIT_CAP)
    more = Api(engine.base_url, make_token(acme, engine="second-engine"))

    def held() -> int:
        with psycopg.connect(database_url().replace("postgres://", "postgresql://"), autocommit=True) as conn:
            return conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND datname = current_database()",
                [APPLICATION_NAME],
            ).fetchone()[0]

    # Each server process on this database (this test's, and the worker's live server if it runs)
    # holds its LISTEN connection and, once it has had a waiter to re-read, the one that re-reads.
    assert engine.get(f"/api/v1/approvals/{ids[0]}?wait=0.2").status_code == 200
    before = held()
    with ThreadPoolExecutor(4) as pool:
        waits = [pool.submit(api.get, f"/api/v1/approvals/{apr}?wait=3") for api in (engine, more) for apr in ids]
        time.sleep(1.2)
        assert 1 <= before and held() == before  # no connection more for the four waits
        decide(ids[0], bob, "approve")
        answers = [wait.result(timeout=20).json()["status"] for wait in waits]
    assert sorted(answers) == ["approved", "approved", "pending", "pending"]


def first_refusal_after(api: Api, path: str, *, within: float) -> float:
    """Seconds until `path` answers 401, polling as fast as the engine can."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        if api.get(path).status_code == 401:
            return time.monotonic() - started
    raise AssertionError(f"{path} still answered after {within} s")


def test_a_key_the_server_has_cached_stops_working_as_soon_as_it_is_revoked(engine, support, acme):
    [apr] = register_gates(engine, support, 1)
    for _ in range(5):  # the server now knows this key without asking the database
        assert engine.get(f"/api/v1/approvals/{apr}").status_code == 200
    token_revoke(token=ApiToken.objects.get(workspace=acme, name="support-engine"))
    # The revocation's NOTIFY empties the cache: milliseconds, not the lifetime of a cache entry.
    assert first_refusal_after(engine, f"/api/v1/approvals/{apr}", within=1) < 1


def test_a_plan_downgrade_makes_a_cached_keys_config_inert_at_once(engine, support, acme):
    served = f"/api/v1/configs/{support.public_id}/served"
    for _ in range(5):
        assert engine.get(served).json()["hitl"]["state"] == "active"
    workspace_set_plan(workspace=acme, plan="free")
    started = time.monotonic()
    while engine.get(served).json()["hitl"]["state"] != "inert":
        assert time.monotonic() - started < 1


def test_a_long_poll_with_a_nul_byte_is_refused_not_an_error(engine, support):
    [apr] = register_gates(engine, support, 1)
    assert engine.get(f"/api/v1/approvals/{apr}%00?wait=1").status_code == 404
    refused = engine.get(f"/api/v1/approvals/{apr}?wait=1%00")
    assert refused.status_code == 400 and error_of(refused)["code"] == "bad_request"


def session_of(user) -> dict:
    """A logged-in browser session's cookie for `user`, made as django.contrib.auth makes one."""
    browser = Client()
    browser.force_login(user)
    return {"Cookie": f"sessionid={browser.cookies['sessionid'].value}"}


def test_a_browser_sessions_wait_is_a_plain_poll(server, acme, alice, support):
    """The wait is the edge's, for tokens; a browser session's `?wait` is answered at once by Django's view."""
    engine = Api(server.url, make_token(acme, engine="support-engine"))
    [apr] = register_gates(engine, support, 1)

    started = time.monotonic()
    response = requests.get(f"{server.url}/api/v1/approvals/{apr}?wait=20", headers=session_of(alice), timeout=40)

    assert response.status_code == 200 and response.json()["status"] == "pending"
    assert time.monotonic() - started < 5


def test_every_spelling_of_a_wait_takes_the_one_wait_path(server, engine, support, acme, bob):
    """HEAD …?wait= and GET …?%77ait= wait like ?wait=: each holds a place of the key's cap, and hears its decision."""
    ids = register_gates(engine, support, WAIT_CAP + 1)
    raw_key = engine.session.headers["Authorization"]
    spellings = [("HEAD", f"/api/v1/approvals/{ids[0]}?wait=25"), ("GET", f"/api/v1/approvals/{ids[1]}?%77ait=25")]
    with ThreadPoolExecutor(WAIT_CAP) as pool:
        held = [
            pool.submit(requests.request, method, server.url + path, headers={"Authorization": raw_key}, timeout=40)
            for method, path in spellings
        ]
        time.sleep(1.5)
        refused = engine.get(f"/api/v1/approvals/{ids[WAIT_CAP]}?wait=1")
        assert refused.status_code == 429 and error_of(refused)["code"] == "too_many_waits"
        decided_at = time.monotonic()
        for apr in ids[:WAIT_CAP]:
            decide(apr, bob, "approve")
        head, get = (future.result(timeout=30) for future in held)
    assert time.monotonic() - decided_at < 5  # woken by the decision, not at the end of the 25 s
    assert head.status_code == 200 and head.content == b"" and int(head.headers["Content-Length"]) > 0
    assert get.json()["status"] == "approved"
