"""Delegation: a reviewer names a stand-in until a time; the stand-in decides on their behalf, recorded so."""

from datetime import UTC, datetime, timedelta

import jwt
import pytest
from django.utils import timezone

from approvals.exceptions import SelfApproval
from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from audit.models import AuditRecord
from people.exceptions import NotAnApprover
from people.models import Delegation
from tests.helpers import error_of, make_member, make_token, travel
from tests.people.support import group_world, grouped_approval


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def in_days(days: float) -> str:
    return _iso(timezone.now() + timedelta(days=days))


def test_it_starts_reads_and_ends_my_delegation(bob_api, alice, bob, acme):
    assert bob_api.get("/api/v1/me/delegation").status_code == 404
    response = bob_api.put(
        "/api/v1/me/delegation", {"delegate": "alice@acme.test", "until": in_days(7), "reason": "Holiday"}
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["delegator"], body["delegate"], body["reason"], body["active"]) == (
        "bob@acme.test",
        "alice@acme.test",
        "Holiday",
        True,
    )
    assert body["id"].startswith("dlg_")
    assert bob_api.get("/api/v1/me/delegation").json() == body
    assert bob_api.delete("/api/v1/me/delegation").status_code == 204
    assert bob_api.get("/api/v1/me/delegation").status_code == 404
    actions = list(AuditRecord.objects.filter(action__startswith="delegation.").values_list("action", flat=True))
    assert actions == ["delegation.started", "delegation.ended"]


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"delegate": "charlie@globex.test", "until": "+7"}, "delegate"),  # outside the workspace
        ({"delegate": "nobody@acme.test", "until": "+7"}, "delegate"),
        ({"delegate": "bob@acme.test", "until": "+7"}, "delegate"),  # myself
        ({"delegate": "alice@acme.test", "until": "-1"}, "until"),  # in the past
        ({"delegate": "alice@acme.test", "until": "+31"}, "until"),  # beyond 30 days
        ({"delegate": "alice@acme.test", "until": "tomorrow"}, "until"),
        ({"delegate": "alice@acme.test"}, "until"),
        ({"until": "+7"}, "delegate"),
        ({"delegate": "alice@acme.test", "until": "+7", "reason": "x" * 2001}, "reason"),
    ],
)
def test_it_names_the_field_of_each_bad_delegation(bob_api, alice, bob, charlie, payload, field):
    if str(payload.get("until", "")).startswith(("+", "-")):
        payload = {**payload, "until": in_days(float(payload["until"]))}
    response = bob_api.put("/api/v1/me/delegation", payload)
    assert response.status_code == 400, response.json()
    assert field in error_of(response)["fields"]
    assert not Delegation.objects.exists()


def test_it_lets_admins_see_and_end_every_delegation(alice_api, bob_api, charlie_api, alice, bob, acme):
    bob_api.put("/api/v1/me/delegation", {"delegate": "alice@acme.test", "until": in_days(3)})
    assert bob_api.get("/api/v1/delegations").status_code == 403
    listed = alice_api.get("/api/v1/delegations").json()["results"]
    assert [(d["delegator"], d["delegate"]) for d in listed] == [("bob@acme.test", "alice@acme.test")]
    assert charlie_api.get("/api/v1/delegations").json()["results"] == []
    assert charlie_api.delete(f"/api/v1/delegations/{listed[0]['id']}").status_code == 404
    assert alice_api.delete(f"/api/v1/delegations/{listed[0]['id']}").status_code == 204
    ended = Delegation.objects.get()
    assert ended.ended_at is not None and ended.ended_by_email == "alice@acme.test"
    record = AuditRecord.objects.get(action="delegation.ended")
    assert record.actor == "alice@acme.test" and record.object == "bob@acme.test"


def test_a_new_delegation_replaces_the_open_one(bob_api, alice, bob, acme):
    make_member(acme, "erin@acme.test", "reviewer")
    bob_api.put("/api/v1/me/delegation", {"delegate": "alice@acme.test", "until": in_days(3)})
    bob_api.put("/api/v1/me/delegation", {"delegate": "erin@acme.test", "until": in_days(5)})
    assert bob_api.get("/api/v1/me/delegation").json()["delegate"] == "erin@acme.test"
    assert Delegation.objects.filter(ended_at__isnull=True).count() == 1


def test_a_delegate_decides_what_its_delegator_could_on_their_behalf(make_api, acme, alice, bob):
    world = group_world(acme, alice)
    approval = grouped_approval(world)
    url = f"/api/v1/approvals/{approval.public_id}/decision"
    bob_api = make_api(make_token(acme, user=bob))
    assert error_of(bob_api.post(url, {"decision": "approve"}))["code"] == "not_an_approver"
    dave_api = make_api(make_token(acme, user=world["dave"]))
    dave_api.put("/api/v1/me/delegation", {"delegate": "bob@acme.test", "until": in_days(2), "reason": "Away"})
    body = bob_api.post(url, {"decision": "approve", "reason": "Covering for Dave."}).json()
    assert body["status"] == "approved"
    assert body["decision"]["decided_by"] == "bob@acme.test" and body["decision"]["on_behalf_of"] == "dave@acme.test"
    row = ApprovalRequest.objects.get(pk=approval.pk)
    assert (row.decided_by_email, row.on_behalf_of) == ("bob@acme.test", "dave@acme.test")
    record = AuditRecord.objects.get(action="approval.decided", object=approval.public_id)
    assert record.actor == "bob@acme.test" and record.data["on_behalf_of"] == "dave@acme.test"
    assert body["approvals"][0]["on_behalf_of"] == "dave@acme.test"
    # The receipt names both.
    claims = jwt.decode(body["receipt"], options={"verify_signature": False})
    assert claims["decided_by"] == "bob@acme.test" and claims["on_behalf_of"] == "dave@acme.test"


def test_a_delegation_stops_at_its_end(acme, alice, bob):
    world = group_world(acme, alice)
    Delegation.objects.create(
        workspace=acme, delegator=world["dave"], delegate=bob, until=timezone.now() + timedelta(hours=1)
    )
    approval = grouped_approval(world)
    with travel(timedelta(hours=2)), pytest.raises(NotAnApprover):
        approval_decide(approval=approval, user=bob, decision="approve")


def test_a_delegate_never_approves_what_its_delegator_requested(acme, alice, bob):
    world = group_world(acme, alice, self_approval=True)
    Delegation.objects.create(
        workspace=acme, delegator=world["dave"], delegate=bob, until=timezone.now() + timedelta(days=1)
    )
    approval = grouped_approval(world, requested_by="Dave@acme.test", self_approval=True)
    with pytest.raises(SelfApproval):
        approval_decide(approval=approval, user=bob, decision="approve")
    rejected, _ = approval_decide(approval=approval, user=bob, decision="reject", reason="Not while Dave is away.")
    assert rejected.status == "rejected" and rejected.on_behalf_of == "dave@acme.test"


def test_history_and_the_request_page_say_on_whose_behalf(client, acme, alice, bob):
    world = group_world(acme, alice)
    Delegation.objects.create(
        workspace=acme, delegator=world["dave"], delegate=bob, until=timezone.now() + timedelta(days=1)
    )
    approval = grouped_approval(world)
    approval_decide(approval=approval, user=bob, decision="reject", reason="Wrong customer")
    client.force_login(bob)
    html = client.get("/hitl/approvals/history/").content.decode()
    row = html[html.index(f'id="row-{approval.public_id}"') :]
    assert "by bob@acme.test on behalf of dave@acme.test at" in row[: row.index("</tr>")]
    page = client.get(f"/hitl/approvals/{approval.public_id}/").content.decode()
    assert "on behalf of dave@acme.test" in page
