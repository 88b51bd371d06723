"""The registration's fast lane (approvals/api_register.py): an engine's registration answered without Django.

Two halves. Over HTTP, against the production ASGI server: what an engine sees through the lane —
the 201, its headers, a replay, a refusal, a revocation, an inert plan — must be what Django's view
answers. In-process: which requests the lane answers and which it hands to Django untouched, body
and all (over HTTP both answer alike by design, so only here can a test tell them apart).
"""

import asyncio
import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.db import connection, connections

from approvals.api_register import MAX_BODY_BYTES, fast_register
from approvals.models import ApprovalRequest
from workspaces.authentication import engine_keys
from workspaces.models import ApiToken, hash_token
from workspaces.services import token_revoke, workspace_set_plan

from ..helpers import Api, make_token
from .engine_support import capped_server, gate_body, make_support_config

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

# Not the lane's shape (a charset parameter), so these go through Django's view: the reference.
THROUGH_DJANGO = {"Content-Type": "application/json; charset=utf-8"}
# What differs between two registrations of the same body: the new request's id and its clock.
OWN = {"id", "created_at", "expires_at"}


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


@pytest.fixture
def server(acme):
    with capped_server() as running:
        yield running


@pytest.fixture
def engine(server, acme) -> Api:
    api = Api(server.url, make_token(acme, engine="support-engine"))
    assert api.get("/api/v1/configs").status_code in (200, 403)  # the server now knows (caches) this key
    return api


def post(api: Api, body, headers: dict | None = None) -> requests.Response:
    return api.post(
        "/api/v1/approvals", data=json.dumps(body), headers={"Content-Type": "application/json", **(headers or {})}
    )


def comparable(response: requests.Response) -> tuple[int, dict, dict]:
    headers = {
        name.lower(): value
        for name, value in response.headers.items()
        if name.lower() not in ("date", "content-length")
    }
    body = response.json()
    return response.status_code, headers, {key: value for key, value in body.items() if key not in OWN}


def test_a_registration_answers_as_djangos_view_does(engine, support):
    reference = post(engine, gate_body(support, run_id="run_django"), THROUGH_DJANGO)
    fast = [post(engine, gate_body(support, run_id="run_django")) for _ in range(3)]
    assert reference.status_code == 201, reference.text
    for answer in fast:
        assert comparable(answer) == comparable(reference)
    ids = [answer.json()["id"] for answer in (reference, *fast)]
    assert len(set(ids)) == 4 and ApprovalRequest.objects.filter(public_id__in=ids, status="pending").count() == 4


def test_a_replay_answers_the_first_request_and_another_body_is_refused(engine, support):
    key = {"Idempotency-Key": "delete-T-4821"}
    first = post(engine, gate_body(support), key)
    replay = post(engine, gate_body(support), key)
    assert (first.status_code, replay.status_code) == (201, 200)
    assert replay.json() == first.json()
    reused = post(engine, gate_body(support, run_id="run_other"), key)
    reference = post(engine, gate_body(support, run_id="run_other"), {**key, **THROUGH_DJANGO})
    assert reused.status_code == 422 and reused.json()["error"]["code"] == "idempotency_key_reused"
    assert (reused.status_code, reused.json()) == (reference.status_code, reference.json())
    assert ApprovalRequest.objects.filter(idempotency_key="delete-T-4821").count() == 1


@pytest.mark.parametrize(
    ("overrides", "status"),
    [
        ({"rule_id": "rul_unknown"}, 400),  # the service refuses it: Django's view answers, word for word
        ({"config_version": 9}, 404),
        ({"run_id": "run\x00"}, 400),  # the fast path is not sure of it: the serializer names the field
        ({"ttl_seconds": 10**9}, 400),
    ],
)
def test_refusals_are_djangos_own(engine, support, overrides, status):
    refused = post(engine, gate_body(support, **overrides))
    reference = post(engine, gate_body(support, **overrides), THROUGH_DJANGO)
    assert refused.status_code == status, refused.text
    assert (refused.status_code, refused.json()) == (reference.status_code, reference.json())
    assert not ApprovalRequest.objects.exists()


HOSTILE = {
    "nan": b'{"kind": "gate", "config_version": NaN}',
    "byte-order-mark": b'\xef\xbb\xbf{"kind": "gate"}',
    "not-utf-8": b'{"kind": "gate", "caller": "\xff\xfe"}',
    "lone-surrogate": b'{"kind": "gate", "caller": "\\ud800"}',
    "deep": b"[" * 200 + b"]" * 200,
    "huge-number": b'{"kind": "gate", "config_version": 1' + b"0" * 5000 + b"}",
    "float-overflow": b'{"kind": "gate", "config_version": 1e400}',
    "empty": b"",
    "null": b"null",
}


def test_hostile_bodies_are_refused_as_djangos_view_refuses_them(engine, support):
    for name, body in HOSTILE.items():  # one server for all of them: each would start its own
        refused = engine.post("/api/v1/approvals", data=body, headers={"Content-Type": "application/json"})
        reference = engine.post("/api/v1/approvals", data=body, headers=THROUGH_DJANGO)
        assert refused.status_code == 400, (name, refused.text)
        assert (refused.status_code, refused.json()) == (reference.status_code, reference.json()), name
    assert not ApprovalRequest.objects.exists()


def test_a_revoked_key_is_refused_at_once(engine, support, acme):
    assert post(engine, gate_body(support)).status_code == 201
    token_revoke(token=ApiToken.objects.get(workspace=acme, name="support-engine"))
    revoked, answers = time.monotonic(), []
    while not answers or (answers[-1] != 401 and time.monotonic() - revoked < 2):
        answers.append(post(engine, gate_body(support)).status_code)
    # The revocation reaches the server as a NOTIFY when it commits: the key may still work for the
    # moment that takes (as through Django's view, which reads the same cache), never after.
    assert answers[-1] == 401 and set(answers[:-1]) <= {201}
    assert time.monotonic() - revoked < 1
    assert [post(engine, gate_body(support)).status_code for _ in range(3)] == [401, 401, 401]
    assert ApprovalRequest.objects.count() == 1 + answers.count(201)


def test_a_downgraded_workspace_registers_nothing(engine, support, acme):
    assert post(engine, gate_body(support)).status_code == 201
    workspace_set_plan(workspace=acme, plan="free")
    time.sleep(0.3)  # the plan change empties the key cache (NOTIFY), as a revocation does
    answers = [post(engine, gate_body(support, run_id=f"run_free_{i}")) for i in range(3)]
    assert [(answer.status_code, answer.json()["status"]) for answer in answers] == [(200, "inert")] * 3
    assert ApprovalRequest.objects.count() == 1


def test_a_client_hanging_up_mid_body_registers_nothing(engine, server, support):
    body = json.dumps(gate_body(support)).encode()
    key = engine.session.headers["Authorization"]
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        head = (
            f"POST /api/v1/approvals HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode() + body[: len(body) // 2])
    time.sleep(0.3)
    assert post(engine, gate_body(support)).status_code == 201  # the server is fine
    assert ApprovalRequest.objects.count() == 1


# ------------------------------------------------------------------------ in-process: which door


class Lane:
    """`fast_register` called as the ASGI server calls it, with the engine key cached as a live server has it."""

    def __init__(self, raw_key: str) -> None:
        self.raw_key = raw_key

    def __enter__(self):
        engine_keys.invalidate(live=True)
        token = ApiToken.objects.select_related("workspace", "user").get(digest=hash_token(self.raw_key))
        engine_keys.put(token.digest, token, engine_keys.generation)
        return self

    def __exit__(self, *exc) -> None:
        engine_keys.invalidate(live=False)

    def call(self, body: bytes, *, headers: dict[str, str] | None = None, query: bytes = b"", hang_up: bool = False):
        """(what was sent, what Django would read next: None if the lane answered)."""
        sent: list[dict] = []
        header_list = {
            "host": "127.0.0.1:8000",
            "authorization": f"Bearer {self.raw_key}",
            "content-type": "application/json",
            "content-length": str(len(body)),
            **(headers or {}),
        }
        scope = {
            "type": "http",
            "method": "POST",
            "path": "/api/v1/approvals",
            "query_string": query,
            "root_path": "",
            "scheme": "http",
            "headers": [(name.encode(), value.encode()) for name, value in header_list.items() if value is not None],
        }
        messages = [{"type": "http.disconnect"}] if hang_up else [{"type": "http.request", "body": body}]

        async def receive() -> dict:
            return messages.pop(0) if messages else {"type": "http.disconnect"}

        async def send(message: dict) -> None:
            sent.append(message)

        async def run():
            loop = asyncio.get_running_loop()
            loop.set_default_executor(ThreadPoolExecutor(1))  # the lane's thread: one, so its connection can be closed
            try:
                handed_on = await fast_register(scope, receive, send)
                return None if handed_on is None else await handed_on()
            finally:
                await loop.run_in_executor(None, connections.close_all)

        return sent, asyncio.run(run())


@pytest.fixture
def lane(acme):
    with Lane(make_token(acme, engine="support-engine")) as running:
        yield running


def test_the_lane_answers_an_engines_plain_registration(lane, support):
    sent, handed_on = lane.call(json.dumps(gate_body(support)).encode(), headers={"idempotency-key": "k-1"})
    assert handed_on is None
    start, body = sent
    assert start["status"] == 201
    assert dict(start["headers"])[b"content-type"] == b"application/json"
    answer = json.loads(body["body"])
    assert ApprovalRequest.objects.get(public_id=answer["id"]).idempotency_key == "k-1"


@pytest.mark.parametrize(
    "change",
    [
        {"headers": {"content-type": "application/json; charset=utf-8"}},
        {"headers": {"accept": "application/json; indent=4"}},
        {"headers": {"host": "evil.example"}},  # Django refuses the Host (400): its answer, not ours
        {"headers": {"idempotency-key": "   "}},  # a blank key is refused by the view, naming the header
        {"headers": {"content-length": None, "transfer-encoding": "chunked"}},
        {"headers": {"authorization": "Bearer an-unknown-key"}},
        {"query": b"dry=1"},
        {"body": lambda support: gate_body(support, rule_id="rul_unknown")},  # the service refuses it
        {"body": lambda support: gate_body(support, caller=7)},  # the fast path is not sure of it
        {"body": lambda support: "[1, 2]"},
        {"body": lambda support: {**gate_body(support), "arguments": {"blob": "x" * MAX_BODY_BYTES}}},
    ],
    ids=[
        "charset",
        "indented",
        "disallowed-host",
        "blank-idempotency-key",
        "chunked",
        "unknown-key",
        "query",
        "unknown-rule",
        "wrong-type",
        "not-an-object",
        "over-64-KiB",
    ],
)
def test_anything_else_goes_to_djangos_view_with_its_body(lane, support, change):
    body_value = change.get("body", lambda support: gate_body(support))(support)
    body = body_value.encode() if isinstance(body_value, str) else json.dumps(body_value).encode()
    sent, handed_on = lane.call(body, headers=change.get("headers"), query=change.get("query", b""))
    assert sent == []
    assert handed_on == {"type": "http.request", "body": body}  # what Django reads first: the whole body
    assert not ApprovalRequest.objects.exists()


def test_a_client_gone_before_its_body_is_answered_by_nobody(lane, support):
    sent, handed_on = lane.call(json.dumps(gate_body(support)).encode(), hang_up=True)
    assert sent == [] and handed_on is None
    assert not ApprovalRequest.objects.exists()


def test_a_failure_is_answered_as_djangos_500_and_not_run_again(lane, support, caplog):
    with connection.cursor() as cursor:  # the registration's statement writes its audit record: make that fail
        cursor.execute("ALTER TABLE audit_auditrecord RENAME TO audit_auditrecord_away")
    try:
        sent, handed_on = lane.call(json.dumps(gate_body(support)).encode())
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE audit_auditrecord_away RENAME TO audit_auditrecord")
    assert handed_on is None  # answered here: Django's view must not register it a second time
    start, body = sent
    assert start["status"] == 500
    assert json.loads(body["body"])["error"]["code"] == "server_error"
    assert "Internal Server Error: /api/v1/approvals" in caplog.text  # logged as Django logs it
    assert not ApprovalRequest.objects.exists()
