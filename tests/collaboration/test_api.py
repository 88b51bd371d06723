"""Comments, claims, snoozes and a run's story over the API (docs/api.md, "People")."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals.review.decide import approval_decide
from audit.models import AuditRecord
from collaboration.models import Claim, Comment, Snooze
from tests.factories import make_approval, make_question, make_token_cap
from tests.helpers import error_of, make_config

pytestmark = pytest.mark.django_db


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent", pass_information_level="full")


def test_it_adds_and_lists_comments_which_never_decide(bob_api, alice_api, support):
    approval = make_approval(support)
    path = f"/api/v1/approvals/{approval.public_id}/comments"

    response = bob_api.post(path, json={"text": "Is T-4821 the customer who wrote in?"})
    assert response.status_code == 201, response.text
    added = response.json()
    assert added["id"].startswith("cmt_")
    assert added | {"id": None, "created_at": None} == {
        "id": None,
        "approval_id": approval.public_id,
        "author": "bob@acme.test",
        "text": "Is T-4821 the customer who wrote in?",
        "via": "api",
        "created_at": None,
    }
    alice_api.post(path, json={"text": "Yes — ticket 991."})

    listed = alice_api.get(path).json()["results"]
    assert [(c["author"], c["text"]) for c in listed] == [
        ("bob@acme.test", "Is T-4821 the customer who wrote in?"),
        ("alice@acme.test", "Yes — ticket 991."),
    ]
    approval.refresh_from_db()
    assert approval.status == "pending"
    assert AuditRecord.objects.filter(action="approval.commented", object=approval.public_id).count() == 2


def test_it_refuses_bad_comments_naming_the_field(bob_api, support):
    approval = make_approval(support)
    path = f"/api/v1/approvals/{approval.public_id}/comments"
    for body in ({"text": ""}, {"text": "   "}, {"text": "x" * 2001}, {"text": 12}, {}):
        response = bob_api.post(path, json=body)
        assert response.status_code == 400, (body, response.text)
        assert "text" in error_of(response)["fields"], body
    assert bob_api.post(path, data="{", headers={"Content-Type": "application/json"}).status_code == 400
    assert not Comment.objects.exists()


def test_engines_and_other_workspaces_may_not_comment_or_read_comments(engine_api, charlie_api, support):
    approval = make_approval(support)
    path = f"/api/v1/approvals/{approval.public_id}/comments"
    assert engine_api.post(path, json={"text": "hi"}).status_code == 403
    assert engine_api.get(path).status_code == 403
    assert charlie_api.post(path, json={"text": "hi"}).status_code == 404
    assert charlie_api.get(path).status_code == 404
    assert not Comment.objects.exists()


def test_a_decided_request_can_still_be_commented_on(bob_api, alice, support):
    approval = make_approval(support)
    approval_decide(approval=approval, user=alice, decision="reject", reason="Wrong customer")
    response = bob_api.post(f"/api/v1/approvals/{approval.public_id}/comments", json={"text": "Agreed."})
    assert response.status_code == 201


def test_one_reviewer_claims_and_the_claim_never_stops_another_deciding(bob_api, alice_api, support):
    approval = make_approval(support)
    path = f"/api/v1/approvals/{approval.public_id}/claim"

    taken = bob_api.post(path)
    assert taken.status_code == 200, taken.text
    assert taken.json()["claimed_by"] == "bob@acme.test"
    assert taken.json()["already_claimed"] is False
    assert bob_api.post(path).json()["already_claimed"] is True

    other = alice_api.post(path)
    assert other.status_code == 409
    assert error_of(other)["code"] == "conflict"
    assert "bob@acme.test" in error_of(other)["message"]

    decided = alice_api.post(f"/api/v1/approvals/{approval.public_id}/decision", json={"decision": "approve"})
    assert decided.status_code == 200
    assert decided.json()["status"] == "approved"
    assert bob_api.post(path).status_code == 409  # nothing left to claim


def test_only_the_claimant_or_an_admin_releases_a_claim(make_api, acme, bob_api, alice_api, support):
    from tests.helpers import make_member, make_token

    dave = make_member(acme, "dave@acme.test", "reviewer")
    dave_api = make_api(make_token(acme, user=dave))
    approval = make_approval(support)
    path = f"/api/v1/approvals/{approval.public_id}/claim"
    bob_api.post(path)

    assert dave_api.delete(path).status_code == 409
    assert Claim.objects.filter(approval=approval).exists()
    assert alice_api.delete(path).status_code == 204
    assert not Claim.objects.filter(approval=approval).exists()
    assert bob_api.delete(path).status_code == 204  # nothing to release: the same answer
    actions = list(AuditRecord.objects.filter(object=approval.public_id).values_list("action", flat=True))
    assert actions.count("approval.claimed") == 1 and actions.count("approval.unclaimed") == 1


def test_a_snooze_hides_a_request_from_my_pending_list_only(bob_api, alice_api, support):
    snoozed = make_approval(support)
    other = make_approval(support)
    until = (timezone.now() + timedelta(hours=4)).isoformat()

    response = bob_api.post(f"/api/v1/approvals/{snoozed.public_id}/snooze", json={"until": until})
    assert response.status_code == 200, response.text

    def pending(api):
        return [row["id"] for row in api.get("/api/v1/approvals", params={"status": "pending"}).json()["results"]]

    assert pending(bob_api) == [other.public_id]
    assert pending(alice_api) == [snoozed.public_id, other.public_id]
    snoozed.refresh_from_db()
    assert snoozed.status == "pending"
    Snooze.objects.update(until=timezone.now() - timedelta(seconds=1))
    assert pending(bob_api) == [snoozed.public_id, other.public_id]


def test_it_refuses_a_snooze_in_the_past_too_long_or_malformed(bob_api, support):
    approval = make_approval(support)
    path = f"/api/v1/approvals/{approval.public_id}/snooze"
    now = timezone.now()
    for until in [(now - timedelta(minutes=1)).isoformat(), (now + timedelta(days=8)).isoformat(), "tomorrow", None]:
        response = bob_api.post(path, json={"until": until})
        assert response.status_code == 400, (until, response.text)
        assert "until" in error_of(response)["fields"]
    assert bob_api.post(path, json={}).status_code == 400
    assert not Snooze.objects.exists()


def test_claims_and_snoozes_of_unknown_or_other_workspaces_requests_answer_404(charlie_api, bob_api, support):
    approval = make_approval(support)
    until = (timezone.now() + timedelta(hours=1)).isoformat()
    for api, apr in ((charlie_api, approval.public_id), (bob_api, "apr_nosuchrequest000")):
        assert api.post(f"/api/v1/approvals/{apr}/claim").status_code == 404
        assert api.delete(f"/api/v1/approvals/{apr}/claim").status_code == 404
        assert api.post(f"/api/v1/approvals/{apr}/snooze", json={"until": until}).status_code == 404
        assert api.get(f"/api/v1/approvals/{apr}/comments").status_code == 404


def test_a_runs_story_lists_every_request_of_the_run_oldest_first(bob_api, charlie_api, alice, support):
    now = timezone.now()
    gate = make_approval(support, run_id="run_7", created_at=now - timedelta(minutes=3))
    approval_decide(approval=gate, user=alice, decision="approve", reason="fine")
    question = make_question(support, run_id="run_7", created_at=now - timedelta(minutes=2))
    cap = make_token_cap(support, run_id="run_7", created_at=now - timedelta(minutes=1))
    make_approval(support, run_id="run_8")

    response = bob_api.get("/api/v1/runs/run_7")
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["run_id"] == "run_7"
    assert [row["id"] for row in body["results"]] == [gate.public_id, question.public_id, cap.public_id]
    assert [row["kind"] for row in body["results"]] == ["gate", "question", "token_cap"]
    assert body["results"][0]["decision"]["decided_by"] == "alice@acme.test"
    assert body["next"] is None
    assert charlie_api.get("/api/v1/runs/run_7").json()["results"] == []


def test_a_runs_story_refuses_engines_and_a_cursor_it_did_not_write(engine_api, bob_api, support):
    assert engine_api.get("/api/v1/runs/run_7").status_code == 403
    for cursor in ("nonsense", ""):
        response = bob_api.get("/api/v1/runs/run_7", params={"cursor": cursor})
        assert response.status_code == 400
        assert "cursor" in error_of(response)["fields"]


def test_requested_by_me_lists_the_requests_made_for_me(bob_api, engine_api, support):
    mine = make_approval(support, requested_by="BOB@acme.test")
    make_approval(support, requested_by="alice@acme.test")
    make_approval(support)
    rows = bob_api.get("/api/v1/approvals", params={"requested_by": "me"}).json()["results"]
    assert [row["id"] for row in rows] == [mine.public_id]
    response = bob_api.get("/api/v1/approvals", params={"requested_by": "you"})
    assert response.status_code == 400
    assert "requested_by" in error_of(response)["fields"]
    assert error_of(engine_api.get("/api/v1/approvals", params={"requested_by": "me"}))["code"] == "forbidden"
