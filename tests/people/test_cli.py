"""`hitl groups`, `hitl delegation` and `hitl approve|deny APR APR …`: the same services on the host."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from approvals.models import ApprovalRequest, Status
from people.models import ApproverGroup, Delegation
from tests.factories import make_approval
from tests.helpers import make_config
from tests.people.support import group_world, grouped_approval


def hitl(*args) -> str:
    out = StringIO()
    call_command("hitl", *args, stdout=out)
    return out.getvalue()


def test_an_admin_keeps_groups_from_the_host(acme, alice, bob):
    group_id = hitl("groups", "create", "Payments", "--workspace", "acme", "--as", "alice@acme.test").strip()
    assert ApproverGroup.objects.get(public_id=group_id).name == "Payments"
    hitl("groups", "add", group_id, "bob@acme.test", "--workspace", "acme", "--as", "alice@acme.test")
    assert "bob@acme.test" in hitl("groups", "list", "--workspace", "acme")
    with pytest.raises(CommandError, match="email: charlie@globex.test is not a member"):
        hitl("groups", "add", group_id, "charlie@globex.test", "--workspace", "acme", "--as", "alice@acme.test")
    with pytest.raises(CommandError, match="not an admin"):
        hitl("groups", "create", "Ops", "--workspace", "acme", "--as", "bob@acme.test")
    hitl("groups", "remove", group_id, "bob@acme.test", "--workspace", "acme", "--as", "alice@acme.test")
    assert "(no members)" in hitl("groups", "list", "--workspace", "acme")


def test_a_reviewer_sets_and_ends_a_delegation_from_the_host(acme, alice, bob):
    out = hitl(
        "delegation", "set", "--to", "alice@acme.test", "--days", "3", "--workspace", "acme", "--as", "bob@acme.test"
    )
    assert out.startswith("alice@acme.test stands in for bob@acme.test until ")
    assert "bob@acme.test → alice@acme.test" in hitl("delegation", "list", "--workspace", "acme")
    with pytest.raises(CommandError, match="until: until is more than 30 days away"):
        hitl(
            "delegation",
            "set",
            "--to",
            "alice@acme.test",
            "--days",
            "31",
            "--workspace",
            "acme",
            "--as",
            "bob@acme.test",
        )
    with pytest.raises(CommandError, match="until: give --until"):
        hitl(
            "delegation",
            "set",
            "--to",
            "alice@acme.test",
            "--until",
            "soon",
            "--workspace",
            "acme",
            "--as",
            "bob@acme.test",
        )
    hitl("delegation", "end", "--workspace", "acme", "--as", "bob@acme.test")
    assert not Delegation.objects.live().exists()
    assert "no live delegation" in hitl("delegation", "show", "--workspace", "acme", "--as", "bob@acme.test")


def test_it_decides_several_requests_at_once_and_names_what_it_did_not(acme, alice, bob):
    support = make_config(acme, "Support agent")
    first, second = make_approval(support), make_approval(support)
    world = group_world(acme, alice)
    grouped = grouped_approval(world)
    out = StringIO()
    with pytest.raises(CommandError, match="1 of 3 requests were not decided"):
        call_command(
            "hitl", "deny", first.public_id, second.public_id, grouped.public_id, "--as", "bob@acme.test",
            "--reason", "Spam", stdout=out,
        )  # fmt: skip
    lines = out.getvalue().splitlines()
    assert lines[:2] == [f"{first.public_id}\trejected", f"{second.public_id}\trejected"]
    assert lines[2].startswith(f"{grouped.public_id}\tpending: not_an_approver — Only members of Payments")
    assert ApprovalRequest.objects.get(pk=grouped.pk).status == Status.PENDING
    with pytest.raises(CommandError, match="Only members of Payments"):
        hitl("approve", grouped.public_id, "--as", "bob@acme.test")
    with pytest.raises(CommandError, match="No approval request apr_nope; nothing was decided"):
        hitl("approve", grouped.public_id, "apr_nope", "--as", "dave@acme.test")
    with pytest.raises(CommandError, match="1 of 2"):
        hitl("approve", grouped.public_id, first.public_id, "--as", "dave@acme.test")
    assert ApprovalRequest.objects.get(pk=grouped.pk).status == Status.APPROVED
