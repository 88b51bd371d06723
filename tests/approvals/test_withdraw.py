"""Withdrawing a pending request (docs/api.md, "People"): its requester or its engine, over real HTTP."""

import threading
import time

import pytest

from approvals.models import ApprovalRequest
from audit.models import AuditRecord

from ..helpers import Api, error_of, make_token
from .engine_support import gate_body, register, token_cap_body

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_the_requester_withdraws_and_the_waiting_engine_halts_at_once(engine, reviewer, admin, support):
    request = register(engine, gate_body(support, requested_by="Bob@acme.test"))
    polled = {}

    def wait() -> None:
        started = time.monotonic()
        polled["answer"] = engine.get(f"/api/v1/approvals/{request['id']}?wait=20").json()
        polled["seconds"] = time.monotonic() - started

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)
    response = reviewer.post(f"/api/v1/approvals/{request['id']}/withdraw", json={"reason": "Wrong customer, sorry."})
    waiter.join(timeout=25)

    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "withdrawn"
    assert body["already_decided"] is False
    assert body["decision"] | {"decided_at": None, "arguments": None, "call_digest": None} == {
        "outcome": "rejected",
        "action": "halt",
        "decided_by": "bob@acme.test",
        "decided_at": None,
        "reason": "Wrong customer, sorry.",
        "expired": False,
        "undeliverable": False,
        "grant_id": None,
        "arguments": None,
        "call_digest": None,
        "edited": False,
        "answers": None,
        "on_behalf_of": None,
        "withdrawn": True,
    }
    assert body["receipt"]
    assert polled["answer"]["status"] == "withdrawn"
    assert polled["seconds"] < 5

    # Nothing decides it afterwards.
    late = admin.post(f"/api/v1/approvals/{request['id']}/decision", json={"decision": "approve"})
    assert late.status_code == 200
    assert late.json()["status"] == "withdrawn"
    assert late.json()["already_decided"] is True
    again = reviewer.post(f"/api/v1/approvals/{request['id']}/withdraw", json={})
    assert again.json()["already_decided"] is True
    records = AuditRecord.objects.filter(object=request["id"], action="approval.withdrawn")
    assert [(r.actor, r.data["withdrawn"]) for r in records] == [("bob@acme.test", True)]


def test_the_engine_that_registered_it_may_withdraw_a_token_cap_which_stops_the_run(engine, support):
    request = register(engine, token_cap_body(support))
    response = engine.post(f"/api/v1/approvals/{request['id']}/withdraw", json={})
    assert response.status_code == 200, response.text
    assert response.json()["decision"]["action"] == "stop_run"
    assert response.json()["decision"]["reason"] == ""
    assert response.json()["decision"]["decided_by"] is None


def test_nobody_else_may_withdraw_and_nothing_changes(server, engine, admin, support, acme, globex, charlie):
    request = register(engine, gate_body(support, requested_by="bob@acme.test"))
    other_engine = Api(server.url, make_token(acme, engine="other-engine"))
    outsider = Api(server.url, make_token(globex, user=charlie))

    for api in (admin, other_engine):
        refused = api.post(f"/api/v1/approvals/{request['id']}/withdraw", json={})
        assert refused.status_code == 403, refused.text
        assert error_of(refused)["code"] == "forbidden"
    assert outsider.post(f"/api/v1/approvals/{request['id']}/withdraw", json={}).status_code == 404
    assert admin.post("/api/v1/approvals/apr_nosuchrequest000/withdraw", json={}).status_code == 404
    assert ApprovalRequest.objects.get(public_id=request["id"]).status == "pending"


def test_a_bad_body_names_the_field(engine, reviewer, support):
    request = register(engine, gate_body(support, requested_by="bob@acme.test"))
    for body in ({"reason": "x" * 2001}, {"reason": 5}):
        response = reviewer.post(f"/api/v1/approvals/{request['id']}/withdraw", json=body)
        assert response.status_code == 400, response.text
        assert "reason" in error_of(response)["fields"]
    assert ApprovalRequest.objects.get(public_id=request["id"]).status == "pending"
