"""A deactivated user or an ex-member is refused at once on every path: API token, pages and CLI."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from approvals.models import ApprovalRequest, Status
from tests.factories import make_approval
from tests.helpers import Api, error_of, make_config, make_token
from workspaces.models import Membership


def deactivate(user) -> None:
    user.is_active = False
    user.save(update_fields=["is_active"])


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent")


def test_it_answers_401_to_every_call_with_a_deactivated_users_token(live_server, acme, alice, bob, support):
    alice_api = Api(live_server.url, make_token(acme, user=alice))
    bob_api = Api(live_server.url, make_token(acme, user=bob))
    approval = make_approval(support)
    deactivate(alice)
    deactivate(bob)

    reads = alice_api.get("/api/v1/configs")
    edit = alice_api.patch(f"/api/v1/configs/{support.public_id}", json={"name": "Renamed"})
    decision = bob_api.post(f"/api/v1/approvals/{approval.public_id}/decision", json={"decision": "approve"})

    for response in (reads, edit, decision):
        assert response.status_code == 401, response.text
        assert "deactivated" in error_of(response)["message"]
    support.refresh_from_db()
    assert support.name == "Support agent"
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING


def test_it_answers_403_to_an_ex_members_token(live_server, acme, bob, support):
    bob_api = Api(live_server.url, make_token(acme, user=bob))
    approval = make_approval(support)
    Membership.objects.filter(user=bob).delete()

    response = bob_api.post(f"/api/v1/approvals/{approval.public_id}/decision", json={"decision": "approve"})

    assert response.status_code == 403
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING


def test_it_logs_a_deactivated_user_out_of_the_pages(client, bob):
    client.force_login(bob)
    assert client.get("/hitl/approvals/").status_code == 200
    deactivate(bob)

    response = client.get("/hitl/approvals/")

    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_it_shows_an_ex_member_no_workspace(client, bob):
    client.force_login(bob)
    Membership.objects.filter(user=bob).delete()

    assert client.get("/hitl/approvals/").status_code == 403


def test_the_cli_refuses_to_decide_as_a_deactivated_reviewer(support, bob):
    approval = make_approval(support)
    deactivate(bob)

    with pytest.raises(CommandError, match="deactivated"):
        call_command("hitl", "approve", approval.public_id, "--as", "bob@acme.test", stdout=StringIO())

    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING


def test_the_cli_refuses_a_token_for_a_deactivated_user(acme, bob):
    deactivate(bob)

    with pytest.raises(CommandError, match="deactivated"):
        call_command("hitl", "token", "create", "--workspace", "acme", "--user", "bob@acme.test", stdout=StringIO())
