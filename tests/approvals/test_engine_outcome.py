"""POST /api/v1/approvals/{apr}/outcome: what happened to an approved call, recorded once."""

from datetime import timedelta

import pytest
from django.urls import reverse

from approvals.models import ApprovalRequest
from audit.models import AuditRecord

from ..helpers import error_of, travel
from .engine_support import decide, gate_body


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


def test_it_takes_outcomes_from_engine_keys_and_from_reviewers_only_when_in_doubt(
    bob_api, alice_api, anonymous_api, bob, pending
):
    decide(pending["id"], bob, "approve")

    assert _outcome(anonymous_api, pending, status="executed").status_code == 401
    not_in_doubt = _outcome(bob_api, pending, status="executed", detail="I looked")
    assert not_in_doubt.status_code == 409
    assert "not in doubt" in error_of(not_in_doubt)["message"]
    assert _outcome(alice_api, pending, status="executed", detail="I looked").status_code == 409
    assert ApprovalRequest.objects.get(public_id=pending["id"]).execution_status == ""


# --- run once: started, in doubt ------------------------------------------------------------------


def test_started_is_recorded_once_and_a_second_started_is_answered_unchanged(engine_api, bob, pending):
    decide(pending["id"], bob, "approve")

    first = _outcome(engine_api, pending, status="started")
    second = _outcome(engine_api, pending, status="started")

    assert first.status_code == 200 and first.json()["already_reported"] is False
    assert first.json()["execution"]["status"] == "started"
    # The second engine to say so learns it was not first: it must not run the call.
    assert second.status_code == 200 and second.json()["already_reported"] is True
    assert second.json()["execution"] == first.json()["execution"]
    assert ApprovalRequest.objects.get(public_id=pending["id"]).execution_status == "started"


def test_executed_completes_a_started_call_and_nothing_starts_it_again(engine_api, bob, pending):
    decide(pending["id"], bob, "approve")
    _outcome(engine_api, pending, status="started")

    done = _outcome(engine_api, pending, status="executed", execution_id="exec_9")
    again = _outcome(engine_api, pending, status="started")

    assert (done.json()["already_reported"], done.json()["execution"]["status"]) == (False, "executed")
    assert (again.json()["already_reported"], again.json()["execution"]["status"]) == (True, "executed")


def test_a_reviewer_records_what_happened_to_an_in_doubt_call_audited_as_theirs(engine_api, bob_api, bob, pending):
    decide(pending["id"], bob, "approve")
    _outcome(engine_api, pending, status="started")  # …and the engine died before it reported

    without_detail = _outcome(bob_api, pending, status="executed")
    started = _outcome(bob_api, pending, status="started", detail="x")
    recorded = _outcome(bob_api, pending, status="failed", detail="The ledger shows no refund for T-4821.")

    assert without_detail.status_code == 400 and "detail" in error_of(without_detail)["fields"]
    assert started.status_code == 400 and "status" in error_of(started)["fields"]
    assert recorded.status_code == 200
    assert recorded.json()["execution"]["status"] == "failed"
    assert recorded.json()["execution"]["detail"] == "The ledger shows no refund for T-4821."
    record = AuditRecord.objects.filter(action="approval.outcome", object=pending["id"]).order_by("id").last()
    assert record.actor == "bob@acme.test" and record.data["recorded_by"] == "bob@acme.test"
    # The engine's late report does not overwrite the reviewer's.
    late = _outcome(engine_api, pending, status="executed")
    assert late.json()["already_reported"] is True and late.json()["execution"]["status"] == "failed"


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


def test_the_request_page_says_the_outcome_is_unknown_and_a_reviewer_records_it_there(client, engine_api, bob, pending):
    decide(pending["id"], bob, "approve")
    _outcome(engine_api, pending, status="started")
    client.force_login(bob)
    page_url = reverse("approvals:detail", args=[pending["id"]])

    page = client.get(page_url).content.decode()
    assert "Outcome unknown" in page and "may or may not have run" in page
    assert reverse("approvals:record_outcome", args=[pending["id"]]) in page

    recorded = client.post(
        reverse("approvals:record_outcome", args=[pending["id"]]),
        {"status": "executed", "detail": "The CRM shows the customer deleted at 10:02."},
        follow=True,
    ).content.decode()

    assert "Recorded: the call executed" in recorded and "Outcome unknown" not in recorded
    stored = ApprovalRequest.objects.get(public_id=pending["id"])
    assert (stored.execution_status, stored.execution_detail) == (
        "executed",
        "The CRM shows the customer deleted at 10:02.",
    )
    record = AuditRecord.objects.filter(action="approval.outcome", object=pending["id"]).order_by("id").last()
    assert record.actor == "bob@acme.test"
