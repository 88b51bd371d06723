"""POST /api/v1/approvals/{apr}/outcome: what happened to an approved call, recorded once."""

from datetime import timedelta

import pytest

from approvals.models import ApprovalRequest

from ..helpers import error_of, travel
from .engine_support import decide, gate_body, make_support_config


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


@pytest.fixture
def pending(engine_api, support) -> dict:
    return engine_api.post("/api/v1/approvals", json=gate_body(support)).json()


def _outcome(api, approval: dict, **body):
    return api.post(f"/api/v1/approvals/{approval['id']}/outcome", json=body)


def test_it_records_the_outcome_of_an_approved_call(engine_api, bob, pending):
    decide(pending["id"], bob, "approve")

    response = _outcome(engine_api, pending, status="executed", execution_id="exec_42", detail="3 rows deleted")

    assert response.status_code == 200
    body = response.json()
    assert body["already_reported"] is False
    assert body["status"] == "approved"  # approve ≠ succeeded: the decision is unchanged
    assert body["execution"]["status"] == "executed"
    assert body["execution"]["execution_id"] == "exec_42"
    assert body["execution"]["detail"] == "3 rows deleted"
    assert engine_api.get(f"/api/v1/approvals/{pending['id']}").json()["execution"] == body["execution"]


def test_it_records_an_outcome_once_and_answers_a_second_report_with_the_first(engine_api, bob, pending):
    decide(pending["id"], bob, "approve")
    first = _outcome(engine_api, pending, status="failed", detail="CRM timed out").json()

    second = _outcome(engine_api, pending, status="executed", execution_id="exec_43")

    assert second.status_code == 200
    assert second.json()["already_reported"] is True
    assert second.json()["execution"] == first["execution"]
    stored = ApprovalRequest.objects.get(public_id=pending["id"])
    assert (stored.execution_status, stored.execution_id) == ("failed", "")


@pytest.mark.parametrize(("decision", "status"), [(None, "pending"), ("reject", "rejected")])
def test_it_answers_409_for_a_request_that_is_not_approved(engine_api, bob, pending, decision, status):
    if decision:
        decide(pending["id"], bob, decision, reason="No.")

    response = _outcome(engine_api, pending, status="executed")

    assert response.status_code == 409
    error = error_of(response)
    assert error["code"] == "conflict"
    assert f"is {status}, not approved" in error["message"]
    assert ApprovalRequest.objects.get(public_id=pending["id"]).execution_status == ""


def test_it_answers_409_for_an_expired_request_even_before_any_sweep(engine_api, pending):
    with travel(timedelta(hours=25)):
        response = _outcome(engine_api, pending, status="executed")

    assert response.status_code == 409
    assert "is expired, not approved" in error_of(response)["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"status": "done"}, "status"),
        ({}, "status"),
        ({"status": "executed", "execution_id": "x" * 256}, "execution_id"),
        ({"status": "executed", "detail": "x" * 2001}, "detail"),
        ({"status": "executed", "execution_id": 7}, "execution_id"),
    ],
)
def test_it_refuses_a_bad_outcome_with_400_naming_the_field(engine_api, bob, pending, body, field):
    decide(pending["id"], bob, "approve")

    response = engine_api.post(f"/api/v1/approvals/{pending['id']}/outcome", json=body)

    assert response.status_code == 400
    assert field in error_of(response)["fields"]
    assert ApprovalRequest.objects.get(public_id=pending["id"]).execution_status == ""


def test_it_takes_outcomes_from_engine_keys_only(bob_api, alice_api, anonymous_api, bob, pending):
    decide(pending["id"], bob, "approve")

    assert _outcome(anonymous_api, pending, status="executed").status_code == 401
    assert _outcome(bob_api, pending, status="executed").status_code == 403
    assert _outcome(alice_api, pending, status="executed").status_code == 403
    assert ApprovalRequest.objects.get(public_id=pending["id"]).execution_status == ""


def test_it_answers_404_for_an_unknown_request(engine_api):
    response = engine_api.post("/api/v1/approvals/apr_doesnotexist00/outcome", json={"status": "executed"})

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


def test_an_engine_key_may_not_decide_nor_edit_a_config(engine_api, support, pending):
    decision = engine_api.post(f"/api/v1/approvals/{pending['id']}/decision", json={"decision": "approve"})
    publish = engine_api.post(f"/api/v1/configs/{support.public_id}/publish", json={})

    assert decision.status_code == 403
    assert publish.status_code == 403
    assert ApprovalRequest.objects.get(public_id=pending["id"]).status == "pending"


def test_it_lets_only_the_registering_engine_key_report_the_outcome(live_server, acme, engine_api, bob, pending):
    from ..helpers import Api, make_token

    decide(pending["id"], bob, "approve")
    other_engine = Api(live_server.url, make_token(acme, engine="billing-engine"))

    response = _outcome(other_engine, pending, status="failed", detail="I did not run it")

    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"
    assert ApprovalRequest.objects.get(public_id=pending["id"]).execution_status == ""
    # The real engine's report is still the first, not an `already_reported` echo of the other's.
    real = _outcome(engine_api, pending, status="executed", execution_id="exec_7")
    assert (real.status_code, real.json()["already_reported"]) == (200, False)
