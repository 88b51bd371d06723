"""Eight reviewers approving a 2-of-N request at the same instant, two hundred times, on PostgreSQL."""

import os
import threading
from collections import Counter

import pytest
from django.db import connection

from approvals.models import ApprovalRequest, Status, Vote
from approvals.review.decide import approval_decide
from tests.factories import make_many
from tests.helpers import make_config, make_member

pytestmark = [pytest.mark.django_db(transaction=True)]

# Each trial is a real race: eight threads released by one barrier on a fresh request. Two hundred
# suffice: without the request's row lock every one of 100 trials broke the property (measured by
# deleting select_for_update() from _approval_vote), and a rarer interleaving that broke one trial in
# fifty would still be caught 98 times in 100. HITL_QUORUM_RACE_TRIALS=1000 for a longer hunt.
TRIALS = int(os.environ.get("HITL_QUORUM_RACE_TRIALS", "200"))
REVIEWERS = 8


def test_racing_votes_never_record_more_than_n_and_flip_the_request_exactly_once(acme):
    config = make_config(acme)
    reviewers = [make_member(acme, f"reviewer{index}@acme.test", "reviewer") for index in range(REVIEWERS)]
    requests = make_many(config, TRIALS, approvals_required=2)
    public_ids = [approval.public_id for approval in requests]
    start = threading.Barrier(REVIEWERS)
    answers: dict[str, list[tuple[str, str, bool]]] = {public_id: [] for public_id in public_ids}
    failures: list[BaseException] = []
    record = threading.Lock()

    def vote(reviewer) -> None:
        # Each thread has its own database connection, as each reviewer's request would.
        try:
            mine = {approval.public_id: approval for approval in ApprovalRequest.objects.filter(config=config)}
            for public_id in public_ids:
                start.wait(timeout=30)  # all eight press Approve on this request at once
                approval, already = approval_decide(approval=mine[public_id], user=reviewer, decision="approve")
                with record:
                    answers[public_id].append((reviewer.email, approval.status, already))
        except BaseException as error:  # noqa: BLE001 — reported below, with the barrier broken for the others
            failures.append(error)
            start.abort()
        finally:
            connection.close()

    threads = [threading.Thread(target=vote, args=(reviewer,)) for reviewer in reviewers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=600)
    assert not failures, failures[0]

    stored = {approval.public_id: approval for approval in ApprovalRequest.objects.filter(config=config)}
    votes: dict[int, list[str]] = {}
    for approval_id, email in Vote.objects.values_list("approval_id", "reviewer_email"):
        votes.setdefault(approval_id, []).append(email)
    for public_id in public_ids:
        row, given = stored[public_id], answers[public_id]
        recorded = votes.get(row.pk, [])
        assert len(given) == REVIEWERS
        assert len(recorded) == 2, f"{public_id} recorded {len(recorded)} votes"
        assert row.status == Status.APPROVED
        kinds = Counter((status, already) for _, status, already in given)
        # One reviewer's vote was recorded and left it pending; one reviewer's vote flipped it
        # (exactly one transition); the six others were told it was already decided.
        assert kinds == {(Status.PENDING, False): 1, (Status.APPROVED, False): 1, (Status.APPROVED, True): 6}, kinds
        counted = {email for email, _, already in given if not already}
        assert counted == set(recorded)
        flipper = next(email for email, status, already in given if status == Status.APPROVED and not already)
        assert row.decided_by_email == flipper
