"""Deciding: once, by reviewers and admins, from the page and the API, also under a race."""

import threading
from datetime import timedelta

import pytest
from django.db import connection

from approvals.models import EXPIRED_REASON, ApprovalRequest, Status
from approvals.review.decide import approval_decide
from tests.factories import make_approval, make_token_cap
from tests.helpers import error_of, make_config, make_member, make_token, travel


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent", pass_information_level="full")


def decision_url(approval) -> str:
    return f"/api/v1/approvals/{approval.public_id}/decision"


def test_it_lets_only_reviewers_and_admins_of_the_workspace_decide(
    anonymous_api, engine_api, charlie_api, bob_api, support
):
    approval = make_approval(support)
    assert anonymous_api.post(decision_url(approval), {"decision": "approve"}).status_code == 401
    response = engine_api.post(decision_url(approval), {"decision": "approve"})
    assert response.status_code == 403 and error_of(response)["code"] == "forbidden"
    response = charlie_api.post(decision_url(approval), {"decision": "approve"})
    assert response.status_code == 404 and error_of(response)["code"] == "not_found"
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING

    response = bob_api.post(decision_url(approval), {"decision": "reject", "reason": "Not this customer."})
    assert response.status_code == 200
    body = response.json()
    assert body["already_decided"] is False
    assert body["id"] == approval.public_id and body["status"] == "rejected"
    assert body["decision"]["outcome"] == "rejected" and body["decision"]["action"] == "halt"
    assert body["decision"]["decided_by"] == "bob@acme.test"
    assert body["decision"]["reason"] == "Not this customer."
    assert body["decision"]["expired"] is False


def test_it_answers_a_second_decision_with_the_first_unchanged(alice_api, bob_api, support):
    approval = make_approval(support)
    first = bob_api.post(decision_url(approval), {"decision": "approve", "reason": "Looks right."}).json()
    second = alice_api.post(decision_url(approval), {"decision": "reject", "reason": "No!"})
    assert second.status_code == 200
    body = second.json()
    assert body["already_decided"] is True
    assert body["decision"] == first["decision"]
    assert body["decision"]["decided_by"] == "bob@acme.test" and body["decision"]["action"] == "resume"
    row = ApprovalRequest.objects.get(pk=approval.pk)
    assert (row.status, row.reason, row.decided_by_email) == ("approved", "Looks right.", "bob@acme.test")


def test_it_decides_a_token_cap_with_proceed_or_stop_only(bob_api, support):
    cap = make_token_cap(support)
    gate = make_approval(support)
    response = bob_api.post(decision_url(cap), {"decision": "approve"})
    assert response.status_code == 400
    error = error_of(response)
    assert "decision" in error["fields"] and "proceed or stop" in error["message"]
    response = bob_api.post(decision_url(gate), {"decision": "proceed"})
    assert response.status_code == 400 and "approve or reject" in error_of(response)["message"]
    body = bob_api.post(decision_url(cap), {"decision": "proceed"}).json()
    assert body["status"] == "approved" and body["decision"]["action"] == "proceed_past_cap"


@pytest.mark.parametrize(
    "payload, field",
    [
        ({}, "decision"),
        ({"decision": "maybe"}, "decision"),
        ({"decision": 7}, "decision"),
        ({"decision": "reject", "reason": "x" * 2001}, "reason"),
        ({"decision": "reject", "reason": ["list"]}, "reason"),
    ],
)
def test_it_refuses_bad_decisions_naming_the_field(bob_api, support, payload, field):
    approval = make_approval(support)
    response = bob_api.post(decision_url(approval), payload)
    assert response.status_code == 400
    assert field in error_of(response)["fields"]
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING


def test_it_refuses_a_body_that_is_not_json(bob_api, support):
    approval = make_approval(support)
    response = bob_api.post(decision_url(approval), data="{not json", headers={"Content-Type": "application/json"})
    assert response.status_code == 400 and error_of(response)["code"] == "bad_json"
    assert bob_api.post("/api/v1/approvals/apr_nope/decision", {"decision": "approve"}).status_code == 404


def test_it_answers_a_decision_after_the_deadline_with_the_expired_state(bob_api, support):
    approval = make_approval(support, ttl=timedelta(minutes=5))
    with travel(timedelta(minutes=6)):
        response = bob_api.post(decision_url(approval), {"decision": "approve"})
    assert response.status_code == 200
    body = response.json()
    assert body["already_decided"] is True and body["status"] == "expired"
    assert body["decision"] == {
        "outcome": "rejected",
        "action": "halt",
        "decided_by": None,
        "on_behalf_of": None,
        "decided_at": body["expires_at"],
        "reason": EXPIRED_REASON,
        "expired": True,
        "undeliverable": False,
        "grant_id": None,
        # Approve with edits: the call decided on (the proposal: nobody edited it).
        "arguments": body["arguments"],
        "call_digest": body["call_digest"],
        "edited": False,
        "answers": None,
        "withdrawn": False,
    }
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.EXPIRED


def test_it_decides_from_the_card_and_the_card_leaves_the_queue(client, bob, support):
    approval = make_approval(support, target="customer T-4821")
    client.force_login(bob)
    response = client.post(
        f"/hitl/approvals/{approval.public_id}/decide/",
        {"decision": "reject", "reason": "Wrong customer"},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    assert response.status_code == 200
    assert 'hx-swap-oob="afterbegin:#decided-log"' in html
    assert "Rejected by bob@acme.test at" in html
    assert ApprovalRequest.objects.get(pk=approval.pk).reason == "Wrong customer"
    assert approval.public_id not in client.get("/hitl/approvals/queue/").content.decode()


def test_it_shows_the_first_decision_to_the_second_reviewer(client, alice, bob, support):
    approval = make_approval(support)
    approval_decide(approval=approval, user=alice, decision="approve")
    client.force_login(bob)
    response = client.post(
        f"/hitl/approvals/{approval.public_id}/decide/", {"decision": "reject"}, headers={"HX-Request": "true"}
    )
    assert response.status_code == 200
    assert "Already approved by alice@acme.test at" in response.content.decode()
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.APPROVED


def test_it_keeps_the_card_with_a_message_when_the_reason_is_too_long(client, bob, support):
    approval = make_approval(support)
    client.force_login(bob)
    response = client.post(
        f"/hitl/approvals/{approval.public_id}/decide/",
        {"decision": "reject", "reason": "x" * 2001},
        headers={"HX-Request": "true"},
    )
    html = response.content.decode()
    assert f'id="card-{approval.public_id}"' in html
    assert "The reason is 2,001 characters; keep it to 2,000." in html
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING


def test_it_answers_404_for_another_workspaces_card(client, charlie, support):
    approval = make_approval(support)
    client.force_login(charlie)
    response = client.post(f"/hitl/approvals/{approval.public_id}/decide/", {"decision": "approve"})
    assert response.status_code == 404
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING


def test_it_decides_without_htmx_and_says_so(client, bob, support):
    approval = make_approval(support)
    client.force_login(bob)
    response = client.post(f"/hitl/approvals/{approval.public_id}/decide/", {"decision": "approve"}, follow=True)
    assert "Approved by bob@acme.test" in response.content.decode()


def _race(approval, reviewers) -> list[tuple[str, str, bool]]:
    """Every reviewer decides `approval` at the same instant, each on a connection of their own."""
    barrier = threading.Barrier(len(reviewers))
    answers: list[tuple[str, str, bool]] = []
    errors: list[BaseException] = []

    def decide(index: int, reviewer) -> None:
        try:
            mine = ApprovalRequest.objects.get(pk=approval.pk)
            barrier.wait(timeout=10)
            got, already = approval_decide(approval=mine, user=reviewer, decision="approve" if index % 2 else "reject")
            answers.append((got.status, got.decided_by_email, already))
        except BaseException as error:  # noqa: B036 — reported below, never lost in a thread
            errors.append(error)
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(i, r)) for i, r in enumerate(reviewers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return answers


def test_it_records_one_decision_when_20_reviewers_decide_at_once(transactional_db, acme):
    """20 threads, each with its own connection, decide the same request at once, 50 times over."""
    support = make_config(acme, "Support agent")
    reviewers = [make_member(acme, f"r{i}@acme.test", "reviewer") for i in range(20)]
    for round_ in range(50):
        approval = make_approval(support, run_id=f"run_{round_}")
        answers = _race(approval, reviewers)
        row = ApprovalRequest.objects.get(pk=approval.pk)
        assert row.status in ("approved", "rejected")
        assert len(answers) == 20
        # Every caller is answered with the one decision the database holds.
        assert {(status, who) for status, who, _ in answers} == {(row.status, row.decided_by_email)}
        assert sorted(already for _, _, already in answers) == [False] + [True] * 19


def test_it_lets_a_user_token_decide_only_while_a_member(make_api, acme, support):
    dave = make_member(acme, "dave@acme.test", "reviewer")
    api = make_api(make_token(acme, user=dave))
    dave.memberships.all().delete()
    approval = make_approval(support)
    assert api.post(decision_url(approval), {"decision": "approve"}).status_code in (401, 403)
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING


def test_the_decide_service_itself_holds_the_reason_to_its_limit_for_decisions_and_votes(support, bob, alice):
    from approvals.exceptions import ReasonTooLong

    single = make_approval(support)
    quorum = make_approval(support, approvals_required=2)
    for approval, decision in [(single, "reject"), (single, "approve"), (quorum, "approve")]:
        with pytest.raises(ReasonTooLong, match="The reason is 2,001 characters; keep it to 2,000."):
            approval_decide(approval=approval, user=bob, decision=decision, reason="x" * 2001)
    assert not quorum.votes.exists()
    assert ApprovalRequest.objects.filter(pk__in=[single.pk, quorum.pk], status=Status.PENDING).count() == 2
    approval, already = approval_decide(approval=single, user=bob, decision="reject", reason="x" * 2000)
    assert (approval.status, len(approval.reason), already) == (Status.REJECTED, 2000, False)
