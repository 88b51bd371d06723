"""The conformance table, the portal's side: each case's world set up, registered over HTTP against the server
as deployed, decided by a person through the API, and the portal's answer held to the case's `answer`.

The clients run the same cases (tests/test_client_conformance.py, tests/adapters/); clients/conformance/README.md.
"""

import pytest
from hitl_client import call_digest

from ..conformance import DEFAULTS, act, cases, mismatches, world

pytestmark = pytest.mark.live_http


def _registration(case: dict, config) -> dict:
    run = {key: DEFAULTS["run"][key] for key in ("run_id", "thread_id", "caller")}
    base = {"config_id": config.public_id, "config_version": 1, **run}
    if "ask" in case:
        return {"kind": "question", **base, **case["ask"]}
    if "plan" in case:
        return {"kind": "plan", **base, **case["plan"]}
    rule_id = config.versions.get(number=1).rules[0]["id"]
    call = {
        key: case["call"][key] for key in ("target", "operation", "arguments", "requested_by") if key in case["call"]
    }
    return {"kind": "gate", **base, "rule_id": rule_id, **call}


def _register(engine_api, body: dict) -> dict:
    # The same key an engine derives from its run, thread and call: a replay finds the same request.
    response = engine_api.post("/api/v1/approvals", body, headers={"Idempotency-Key": "conformance-call_1"})
    assert response.status_code in (200, 201), response.text
    return response.json()


def _ran(engine_api, approval: dict) -> dict:
    """What an engine told `runs` does with an approved call: started, run, reported with the digest of what ran."""
    decision = approval["decision"]
    digest = call_digest(target=approval["target"], operation=approval["operation"], arguments=decision["arguments"])
    path = f"/api/v1/approvals/{approval['id']}/outcome"
    assert engine_api.post(path, {"status": "started"}).json()["already_reported"] is False
    return engine_api.post(path, {"status": "executed", "call_digest": digest}).json()


@pytest.mark.parametrize("case", cases(where=lambda case: case["answer"] is not None))
def test_the_portal_answers_each_case_as_the_table_says(case, acme, alice, bob, engine_api, alice_api, bob_api):
    config = world(case, acme, alice)
    body = _registration(case, config)
    for step in case.get("before", []):
        if "halt_run" in step:
            halted = alice_api.post("/api/v1/runs/halt", {"run_id": DEFAULTS["run"]["run_id"], **step["halt_run"]})
            assert halted.status_code in (200, 201), halted.text
        if "started_before" in step:  # an earlier engine registered, was approved, started, and died
            first = _register(engine_api, body)
            assert bob_api.post(f"/api/v1/approvals/{first['id']}/decision", step["started_before"]).status_code == 200
            engine_api.post(f"/api/v1/approvals/{first['id']}/outcome", {"status": "started"})

    answer = _register(engine_api, body)
    if answer["status"] == "pending":
        for step in case["steps"]:
            act(step, answer["id"], reviewer_api=bob_api)
    if "id" in answer:
        answer = engine_api.get(f"/api/v1/approvals/{answer['id']}").json()
        if case["expect"]["runs"] and answer["status"] == "approved" and not answer["execution"]:
            answer = _ran(engine_api, answer)

    assert mismatches(case["answer"], answer) == []
