"""Halting a run, freezing a workspace (docs/api.md, "Halting"): over real HTTP against the ASGI server."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from approvals.models import ApprovalRequest, Grant, Halt
from audit.models import AuditRecord

from ..helpers import Api, error_of, make_token
from .engine_support import gate_body, make_support_config, register, token_cap_body

pytestmark = [pytest.mark.django_db(transaction=True)]

REASON = "The agent is deleting the wrong customers; stop everything it does."


def test_halting_a_run_rejects_its_pending_requests_and_stores_its_later_ones_rejected(engine, reviewer, support):
    halted_run = [register(engine, gate_body(support, run_id="run_bad", target=f"customer T-{i}")) for i in range(3)]
    cap = register(engine, token_cap_body(support, run_id="run_bad"))
    other = register(engine, gate_body(support, run_id="run_good"))

    response = reviewer.post("/api/v1/runs/halt", json={"run_id": "run_bad", "reason": REASON})

    assert response.status_code == 200, response.text
    assert response.json() | {"halted_at": None} == {
        "run_id": "run_bad",
        "config_id": None,
        "reason": REASON,
        "halted_by": "bob@acme.test",
        "halted_at": None,
        "rejected": 4,
        "grants_revoked": 0,
    }
    for request in halted_run:
        approval = engine.get(f"/api/v1/approvals/{request['id']}").json()
        assert approval["status"] == "rejected"
        assert approval["decision"] | {"decided_at": None} == {
            "outcome": "rejected",
            "action": "halt",
            "decided_by": "bob@acme.test",
            "on_behalf_of": None,
            "decided_at": None,
            "reason": REASON,
            "expired": False,
            "undeliverable": False,
            "grant_id": None,
            "arguments": approval["arguments"],  # the call decided on: the proposal, nobody edited it
            "call_digest": approval["call_digest"],
            "edited": False,
            "answers": None,
            "withdrawn": False,
        }
        assert approval["receipt"]
    assert engine.get(f"/api/v1/approvals/{cap['id']}").json()["decision"]["action"] == "stop_run"
    assert engine.get(f"/api/v1/approvals/{other['id']}").json()["status"] == "pending"  # another run goes on

    later = register(engine, gate_body(support, run_id="run_bad", target="customer T-9"))
    assert (later["status"], later["decision"]["action"], later["decision"]["reason"]) == ("rejected", "halt", REASON)
    assert later["decision"]["decided_by"] == "bob@acme.test"
    assert register(engine, gate_body(support, run_id="run_good", target="customer T-9"))["status"] == "pending"

    assert reviewer.delete("/api/v1/runs/halt/run_bad").status_code == 204
    assert register(engine, gate_body(support, run_id="run_bad", target="customer T-10"))["status"] == "pending"
    assert reviewer.delete("/api/v1/runs/halt/run_bad").status_code == 204  # lifting twice changes nothing

    records = AuditRecord.objects.filter(action__in=["run.halted", "run.resumed"]).order_by("id")
    actions = list(records.values_list("action", "object"))
    assert actions == [("run.halted", "run_bad"), ("run.resumed", "run_bad")]
    assert AuditRecord.objects.filter(action="approval.decided", object=halted_run[0]["id"]).exists()


def test_a_halt_under_one_config_leaves_the_run_under_another_alone(engine, reviewer, acme, alice, support):
    second = make_support_config(acme, alice, name="Billing agent")
    mine = register(engine, gate_body(support, run_id="run_1"))
    theirs = register(engine, gate_body(second, run_id="run_1"))

    response = reviewer.post(
        "/api/v1/runs/halt", json={"run_id": "run_1", "config_id": support.public_id, "reason": REASON}
    )

    assert response.status_code == 200 and response.json()["rejected"] == 1
    assert engine.get(f"/api/v1/approvals/{mine['id']}").json()["status"] == "rejected"
    assert engine.get(f"/api/v1/approvals/{theirs['id']}").json()["status"] == "pending"
    assert register(engine, gate_body(second, run_id="run_1", target="customer T-2"))["status"] == "pending"
    assert register(engine, gate_body(support, run_id="run_1", target="customer T-2"))["status"] == "rejected"


def test_a_halt_revokes_the_runs_grants(engine, reviewer, acme, alice):
    from .test_policy import policy_config

    config = policy_config(acme, alice)  # its second rule allows run grants
    first = register(engine, gate_body(config, rule=1, run_id="run_1"))
    granted = reviewer.post(f"/api/v1/approvals/{first['id']}/decision", json={"decision": "approve", "grant": "run"})
    assert granted.status_code == 200, granted.text
    assert register(engine, gate_body(config, rule=1, run_id="run_1", target="T-2"))["status"] == "approved"

    response = reviewer.post("/api/v1/runs/halt", json={"run_id": "run_1", "reason": REASON})

    assert response.json()["grants_revoked"] == 1
    assert Grant.objects.get().revoked_at is not None
    assert register(engine, gate_body(config, rule=1, run_id="run_1", target="T-3"))["status"] == "rejected"
    reviewer.delete("/api/v1/runs/halt/run_1")
    assert register(engine, gate_body(config, rule=1, run_id="run_1", target="T-4"))["status"] == "pending"


def test_halting_needs_a_reviewer_and_a_reason(engine, reviewer, support):
    assert engine.post("/api/v1/runs/halt", json={"run_id": "run_1", "reason": REASON}).status_code == 403
    refused = reviewer.post("/api/v1/runs/halt", json={"run_id": "run_1", "reason": ""})
    assert refused.status_code == 400 and "reason" in error_of(refused)["fields"]
    refused = reviewer.post("/api/v1/runs/halt", json={"reason": REASON})
    assert refused.status_code == 400 and "run_id" in error_of(refused)["fields"]
    too_long = reviewer.post("/api/v1/runs/halt", json={"run_id": "run_1", "reason": "x" * 2001})
    assert too_long.status_code == 400 and "reason" in error_of(too_long)["fields"]
    other_config = reviewer.post("/api/v1/runs/halt", json={"run_id": "run_1", "config_id": "cfg_nope", "reason": "x"})
    assert other_config.status_code == 404
    assert not Halt.objects.exists()


def test_freezing_the_workspace_halts_every_run_until_thawed(engine, reviewer, admin, support):
    pending = [register(engine, gate_body(support, run_id=f"run_{i}")) for i in range(3)]

    assert reviewer.post("/api/v1/workspace/freeze", json={"reason": REASON}).status_code == 403  # admins only
    assert engine.post("/api/v1/workspace/freeze", json={"reason": REASON}).status_code == 403
    response = admin.post("/api/v1/workspace/freeze", json={"reason": REASON})

    assert response.status_code == 200, response.text
    assert (response.json()["run_id"], response.json()["rejected"]) == (None, 3)
    assert {engine.get(f"/api/v1/approvals/{r['id']}").json()["status"] for r in pending} == {"rejected"}
    later = register(engine, gate_body(support, run_id="run_new"))
    assert (later["status"], later["decision"]["reason"]) == ("rejected", REASON)

    assert admin.delete("/api/v1/workspace/freeze").status_code == 204
    assert register(engine, gate_body(support, run_id="run_newer"))["status"] == "pending"
    records = AuditRecord.objects.filter(action__startswith="workspace.").order_by("id")
    actions = list(records.values_list("action", flat=True))
    assert actions == ["workspace.frozen", "workspace.thawed"]


def test_fifty_waiting_engines_are_answered_halted_by_one_halt_of_a_hundred_requests(server, acme, support, reviewer):
    engine = Api(server.url, make_token(acme, engine="busy-engine"))
    ids = [register(engine, gate_body(support, run_id="run_wild", target=f"customer T-{i}"))["id"] for i in range(100)]
    waiting = ids[:50]
    started = threading.Barrier(len(waiting) + 1)

    def wait_for(public_id: str) -> list[dict]:
        engine_of_its_own = Api(server.url, engine.session.headers["Authorization"].removeprefix("Bearer "))
        started.wait()
        # One long-poll: an answer from it is the wake-up (nothing else ends a 25-second wait early).
        return [engine_of_its_own.get(f"/api/v1/approvals/{public_id}", params={"wait": 25}).json()]

    with ThreadPoolExecutor(len(waiting)) as pool:
        answers = [pool.submit(wait_for, public_id) for public_id in waiting]
        started.wait()
        time.sleep(1)  # let the polls reach their waits (one that has not yet reads the halt at once: same answer)
        response = reviewer.post("/api/v1/runs/halt", json={"run_id": "run_wild", "reason": REASON})
        results = [answer.result(timeout=60) for answer in answers]

    assert response.json()["rejected"] == 100
    for [approval] in results:
        assert approval["status"] == "rejected"
        assert (approval["decision"]["action"], approval["decision"]["reason"]) == ("halt", REASON)
    statuses = set(ApprovalRequest.objects.filter(public_id__in=ids).values_list("status", flat=True))
    assert statuses == {"rejected"}  # none approved, none left pending
