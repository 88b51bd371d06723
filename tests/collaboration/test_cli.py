"""`hitl comment`, `hitl claim`: the API's comments and claims on the host, on the same rules."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from collaboration.models import Claim, Comment
from tests.factories import make_approval
from tests.helpers import make_config

pytestmark = pytest.mark.django_db


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent")


def hitl(*args) -> str:
    out = StringIO()
    call_command("hitl", *args, stdout=out)
    return out.getvalue()


def test_comment_adds_a_comment_that_never_decides(support, bob):
    approval = make_approval(support)
    out = hitl("comment", approval.public_id, "--as", "bob@acme.test", "Checking with the customer first.")
    comment = Comment.objects.get()
    assert out.strip() == f"{comment.public_id}: commented on {approval.public_id}"
    assert (comment.author_email, comment.text, comment.via) == (
        "bob@acme.test",
        "Checking with the customer first.",
        "cli",
    )
    approval.refresh_from_db()
    assert approval.status == "pending"


def test_claim_and_release(support, bob, alice):
    approval = make_approval(support)
    assert "You are on it" in hitl("claim", approval.public_id, "--as", "bob@acme.test")
    with pytest.raises(CommandError, match="bob@acme.test is on it already"):
        hitl("claim", approval.public_id, "--as", "alice@acme.test")
    assert hitl("claim", approval.public_id, "--as", "alice@acme.test", "--release").strip() == (
        f"Released {approval.public_id}."
    )
    assert not Claim.objects.exists()


def test_it_refuses_outsiders_unknown_requests_and_empty_comments(support, bob, charlie):
    approval = make_approval(support)
    with pytest.raises(CommandError, match="not a reviewer or admin of acme"):
        hitl("comment", approval.public_id, "--as", "charlie@globex.test", "hi")
    with pytest.raises(CommandError, match="No approval request"):
        hitl("claim", "apr_nosuchrequest000", "--as", "bob@acme.test")
    with pytest.raises(CommandError, match="cannot be empty"):
        hitl("comment", approval.public_id, "--as", "bob@acme.test", "   ")
    assert not Comment.objects.exists()
