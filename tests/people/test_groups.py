"""Approver groups: admins keep them; a rule naming them lets only their members decide, on every door."""

import pytest
from model_bakery import baker

from approvals.exceptions import SelfApproval
from approvals.models import ApprovalRequest, Status
from approvals.presenters.facts import facts
from approvals.review.decide import approval_decide
from approvals.review.links import link_url_for
from audit.models import AuditRecord
from common.ids import new_public_id
from contacts.models import Delivery
from contacts.services import contact_create
from people.exceptions import NotAnApprover
from people.models import ApproverGroup, GroupMember
from tests.factories import make_approval
from tests.helpers import error_of, make_config, make_member, make_token
from tests.people.support import group_world, grouped_approval


def test_it_lets_only_admins_keep_groups(alice_api, bob_api, engine_api, anonymous_api, acme):
    assert anonymous_api.get("/api/v1/groups").status_code == 401
    assert bob_api.post("/api/v1/groups", {"name": "Payments"}).status_code == 403
    assert engine_api.get("/api/v1/groups").status_code == 403
    response = alice_api.post("/api/v1/groups", {"name": "Payments"})
    assert response.status_code == 201
    body = response.json()
    assert body["id"].startswith("grp_") and body["name"] == "Payments" and body["members"] == []
    assert alice_api.get("/api/v1/groups").json()["results"] == [body]
    assert AuditRecord.objects.filter(action="group.created", object=body["id"]).exists()


def test_it_names_the_field_of_each_bad_group_input(alice_api, acme):
    for payload, field in [({}, "name"), ({"name": ""}, "name"), ({"name": "x" * 101}, "name"), ({"name": 7}, "name")]:
        response = alice_api.post("/api/v1/groups", payload)
        assert response.status_code == 400 and field in error_of(response)["fields"], payload
    alice_api.post("/api/v1/groups", {"name": "Payments"})
    response = alice_api.post("/api/v1/groups", {"name": "Payments"})
    assert response.status_code == 409 and error_of(response)["code"] == "conflict"
    assert ApproverGroup.objects.count() == 1


def test_it_adds_and_removes_members_of_the_workspace_only(alice_api, bob, acme, charlie):
    group = alice_api.post("/api/v1/groups", {"name": "Payments"}).json()
    members = f"/api/v1/groups/{group['id']}/members"
    response = alice_api.post(members, {"email": "charlie@globex.test"})
    assert response.status_code == 400 and "email" in error_of(response)["fields"]
    response = alice_api.post(members, {"email": "BOB@acme.test"})
    assert response.status_code == 201 and response.json()["members"] == ["bob@acme.test"]
    assert alice_api.post(members, {"email": "bob@acme.test"}).json()["members"] == ["bob@acme.test"]
    assert alice_api.delete(f"{members}/bob@acme.test").status_code == 204
    assert not GroupMember.objects.exists()
    assert alice_api.delete(f"{members}/bob@acme.test").status_code == 404
    actions = list(AuditRecord.objects.filter(object=group["id"]).values_list("action", flat=True))
    assert actions == ["group.created", "group.member_added", "group.member_removed"]


def test_it_answers_another_workspaces_group_as_missing(alice_api, charlie_api, acme):
    group = alice_api.post("/api/v1/groups", {"name": "Payments"}).json()
    assert charlie_api.get(f"/api/v1/groups/{group['id']}").status_code == 404
    response = charlie_api.post(f"/api/v1/groups/{group['id']}/members", {"email": "charlie@globex.test"})
    assert response.status_code == 404 and error_of(response)["code"] == "not_found"
    assert charlie_api.get("/api/v1/groups").json()["results"] == []


def test_it_refuses_a_rule_naming_a_group_of_another_workspace(alice_api, charlie_api, acme, globex):
    theirs = charlie_api.post("/api/v1/groups", {"name": "Globex payments"}).json()
    config = make_config(acme)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", {"approver_groups": [theirs["id"]]})
    assert response.status_code == 400
    error = error_of(response)
    assert "approver_groups" in error["fields"] and theirs["id"] in error["fields"]["approver_groups"]
    ours = alice_api.post("/api/v1/groups", {"name": "Payments"}).json()
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", {"approver_groups": [ours["id"]]})
    assert response.status_code == 201 and response.json()["approver_groups"] == [ours["id"]]
    version = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", {}).json()
    assert version["rules"][0]["approver_groups"] == [ours["id"]]


def test_it_lets_only_group_members_decide(make_api, acme, alice, bob):
    world = group_world(acme, alice)
    approval = grouped_approval(world)
    url = f"/api/v1/approvals/{approval.public_id}/decision"
    for outsider in (bob, alice):  # a reviewer and an admin outside the group alike
        response = make_api(make_token(acme, user=outsider)).post(url, {"decision": "approve"})
        assert response.status_code == 403
        error = error_of(response)
        assert error["code"] == "not_an_approver" and "Payments" in error["message"]
    response = make_api(make_token(acme, user=bob)).post(url, {"decision": "reject", "reason": "no"})
    assert response.status_code == 403 and error_of(response)["code"] == "not_an_approver"
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING
    body = make_api(make_token(acme, user=world["dave"])).post(url, {"decision": "approve"}).json()
    assert body["status"] == "approved" and body["decision"]["decided_by"] == "dave@acme.test"
    assert body["decision"]["on_behalf_of"] is None


def test_it_counts_only_group_members_towards_a_quorum(acme, alice, bob):
    world = group_world(acme, alice, approvals_required=2)
    erin = make_member(acme, "erin@acme.test", "reviewer")
    approval = grouped_approval(world, approvals_required=2)
    with pytest.raises(NotAnApprover):
        approval_decide(approval=approval, user=bob, decision="approve")
    approval_decide(approval=approval, user=world["dave"], decision="approve")
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING
    with pytest.raises(NotAnApprover):
        approval_decide(approval=approval, user=erin, decision="approve")
    GroupMember.objects.create(group=world["group"], user=erin)
    decided, _ = approval_decide(approval=approval, user=erin, decision="approve")
    assert decided.status == Status.APPROVED and decided.votes.count() == 2


def test_it_forgets_a_member_who_left_the_workspace(acme, alice):
    world = group_world(acme, alice)
    approval = grouped_approval(world)
    acme.memberships.filter(user=world["dave"]).delete()
    with pytest.raises(NotAnApprover):
        approval_decide(approval=approval, user=world["dave"], decision="approve")


def test_it_still_holds_four_eyes_for_a_group_member(acme, alice):
    world = group_world(acme, alice)
    approval = grouped_approval(world, requested_by="dave@acme.test")
    with pytest.raises(SelfApproval):
        approval_decide(approval=approval, user=world["dave"], decision="approve")


def test_a_one_click_link_of_someone_outside_the_groups_decides_nothing(client, acme, alice, bob):
    world = group_world(acme, alice)
    contact = contact_create(config=world["config"], name="Bob", channel="email", channel_ref="${HITL_ACME_BOB_EMAIL}")
    approval = grouped_approval(world)
    delivery = baker.make(
        Delivery,
        public_id=new_public_id("dlv"),
        workspace=acme,
        approval=approval,
        contact_public_id=contact.public_id,
        event="requested",
        channel="email",
    )
    url = link_url_for(delivery=delivery, email="bob@acme.test")
    response = client.post(url[url.index("/hitl/r/") :], {"decision": "approve"})
    assert response.status_code == 403
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING
    assert Delivery.objects.get(pk=delivery.pk).link_used_at is None  # the link still works for a member


def test_the_card_and_page_say_who_decides(acme, alice):
    world = group_world(acme, alice)
    approval = grouped_approval(world)
    shown = {fact.key: fact.value for fact in facts(approval)}
    assert shown["approvers"] == "members of Payments (or their delegates)"
    assert "approvers" not in {fact.key for fact in facts(make_approval(world["config"]))}


def test_an_admin_names_groups_on_the_rules_tab(client, acme, alice):
    world = group_world(acme, alice)
    config, rule = world["config"], world["rule"]
    client.force_login(alice)
    page = client.get(f"/hitl/configs/{config.public_id}/rules/{rule.public_id}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Only these groups decide" in html and "Payments" in html
    assert f'value="{world["group"].public_id}"' in html and "checked" in html
