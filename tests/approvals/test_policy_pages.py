"""The approver policy on the Approvals tab, the Grants page, the history and the CLI."""

from html import unescape
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from approvals.models import ApprovalRequest, Grant, Status, Vote
from approvals.review.decide import approval_decide
from tests.factories import make_approval
from tests.helpers import make_config, make_member

FOUR_EYES = "Requested by you — another reviewer must approve"
APPROVE_BUTTON = 'name="decision" value="approve"'
GRANT_BUTTON = "Approve for the rest of this run"


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent")


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def hitl(*args) -> str:
    out = StringIO()
    call_command("hitl", *args, stdout=out)
    return out.getvalue()


def queue(client) -> str:
    """The queue's text as shown (a card is kept in ASCII, other characters as references)."""
    return unescape(client.get(reverse("approvals:queue")).content.decode())


def decide(client, approval, **data):
    return client.post(reverse("approvals:decide", args=[approval.public_id]), data, HTTP_HX_REQUEST="true")


def test_it_hides_approve_from_the_person_the_run_acts_for(support, alice, bob):
    approval = make_approval(support, requested_by="Bob@acme.test", allow_run_grant=True)
    bobs = queue(client_for(bob))
    assert FOUR_EYES in bobs and APPROVE_BUTTON not in bobs and GRANT_BUTTON not in bobs
    assert 'value="reject"' in bobs and "Bob@acme.test" in bobs
    alices = queue(client_for(alice))
    assert FOUR_EYES not in alices and APPROVE_BUTTON in alices and GRANT_BUTTON in alices
    # A forged POST is refused by the same check, with the reason on the card.
    page = decide(client_for(bob), approval, decision="approve").content.decode()
    assert "another reviewer" in page and "four eyes" in page
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING
    assert "Rejected by bob@acme.test" in decide(client_for(bob), approval, decision="reject").content.decode()


def test_it_shows_quorum_progress_and_who_may_still_approve_on_the_card(support, alice, bob):
    dave = make_member(support.workspace, "dave@acme.test", "reviewer")
    approval = make_approval(support, approvals_required=2, requested_by="dave@acme.test")
    page = queue(client_for(alice))
    assert "0 of 2 approvals" in page
    assert "May still approve: alice@acme.test, bob@acme.test" in page  # dave: four eyes

    card = decide(client_for(bob), approval, decision="approve", reason="Checked.").content.decode()
    assert "1 of 2 approvals — bob@acme.test" in card and "Your approval is recorded." in card
    assert "You approved — waiting for another reviewer" in card and APPROVE_BUTTON not in card
    assert "May still approve: alice@acme.test<" in card
    assert 'id="card-' in card  # the card stays in the queue, updated
    assert "1 of 2 approvals — bob@acme.test" in queue(client_for(alice))

    done = decide(client_for(alice), approval, decision="approve").content.decode()
    assert "Approved by alice@acme.test" in done
    assert Vote.objects.filter(approval=approval).count() == 2
    assert dave  # a reviewer who may not approve this one


def test_it_shows_every_vote_in_the_history(support, alice, bob):
    approval = make_approval(support, approvals_required=2)
    approval_decide(approval=approval, user=bob, decision="approve", reason="Looks right.")
    approval_decide(approval=approval, user=alice, decision="approve")
    history = client_for(alice).get(reverse("approvals:history")).content.decode()
    assert "Approved by bob@acme.test at" in history and "— Looks right." in history
    assert history.count("<li>Approved by") == 2 and "2 of 2 approvals — bob@acme.test, alice@acme.test" in history


def test_it_grants_the_rest_of_a_run_from_the_card_for_the_chosen_time(support, alice, bob):
    approval = make_approval(support, allow_run_grant=True)
    assert GRANT_BUTTON in queue(client_for(bob))
    decide(client_for(bob), approval, grant="run", grant_ttl_seconds=7200, reason="Whole run is fine.")
    grant = Grant.objects.get()
    assert round((grant.expires_at - grant.created_at).total_seconds()) == 7200
    assert (grant.run_id, grant.granted_by_email) == ("run_1", "bob@acme.test")
    row = ApprovalRequest.objects.get(pk=approval.pk)
    assert (row.status, row.grant_id) == (Status.APPROVED, grant.public_id)
    plain = make_approval(support)
    assert GRANT_BUTTON not in decide(client_for(bob), plain, decision="reject").content.decode()
    refused = decide(client_for(bob), make_approval(support), grant="run").content.decode()
    assert "does not allow run grants" in refused


def test_it_lists_live_grants_with_their_uses_and_revokes_one(support, alice, bob, charlie):
    approval = make_approval(support, allow_run_grant=True)
    approval_decide(approval=approval, user=bob, decision="approve", grant_ttl_seconds=3600)
    grant = Grant.objects.get()
    make_approval(support, grant=grant, status=Status.APPROVED, allow_run_grant=True)
    page = client_for(alice).get(reverse("approvals:grants")).content.decode()
    assert grant.public_id in page and '<td class="uses">1</td>' in page and "Revoke" in page
    assert grant.public_id not in client_for(charlie).get(reverse("approvals:grants")).content.decode()
    outsider = client_for(charlie).post(reverse("approvals:grant-revoke", args=[grant.public_id]))
    assert outsider.status_code == 404
    response = client_for(bob).post(reverse("approvals:grant-revoke", args=[grant.public_id]), follow=True)
    assert "Revoked " + grant.public_id in response.content.decode()
    assert Grant.objects.get().revoked_at is not None
    assert grant.public_id + "<" not in client_for(alice).get(reverse("approvals:grants")).content.decode()


def test_the_cli_keeps_four_eyes_and_counts_quorum_votes(support, alice, bob):
    mine = make_approval(support, requested_by="bob@acme.test")
    with pytest.raises(CommandError, match="another reviewer"):
        hitl("approve", mine.public_id, "--as", "bob@acme.test")
    assert ApprovalRequest.objects.get(pk=mine.pk).status == Status.PENDING
    assert "Rejected by bob@acme.test" in hitl("deny", mine.public_id, "--as", "bob@acme.test", "--reason", "No")

    quorum = make_approval(support, approvals_required=2)
    out = hitl("approve", quorum.public_id, "--as", "bob@acme.test", "--note", "Fine")
    assert out.strip().endswith("1 of 2 approvals — bob@acme.test.") and "bob@acme.test approved" in out
    assert "already approved" in hitl("approve", quorum.public_id, "--as", "bob@acme.test")
    assert hitl("approve", quorum.public_id, "--as", "alice@acme.test").startswith("Approved by alice@acme.test")


def test_its_request_page_shows_quorum_progress_then_every_vote(support, alice, bob):
    make_member(support.workspace, "dave@acme.test", "reviewer")
    approval = make_approval(support, approvals_required=2)
    page_url = reverse("approvals:detail", args=[approval.public_id])
    approval_decide(approval=approval, user=bob, decision="approve", reason="Looks right.")
    pending = client_for(alice).get(page_url).content.decode()
    assert "1 of 2 approvals — bob@acme.test" in pending
    assert "May still approve: alice@acme.test, dave@acme.test" in pending

    approval_decide(approval=approval, user=alice, decision="approve")
    decided = client_for(bob).get(page_url).content.decode()
    assert "2 of 2 approvals — bob@acme.test, alice@acme.test" in decided
    assert "Approved by bob@acme.test at" in decided and "Looks right." in decided
    assert "Approved by alice@acme.test at" in decided
