"""The person a run acted for hears how their request ended, on their own channels (docs/collaboration.md).

Through the real path: the API ends the request, the ending statement hands it to integrations, the notice
is queued on commit and a django-q2 cluster in another process sends it to SMTP on loopback.
"""

import pytest
from django_q.models import OrmQ, Task

from integrations.requester_notices import TASK
from tests.factories import make_approval
from tests.helpers import make_config, make_member
from tests.loopback import Cluster, wait_for


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent", pass_information_level="full")


@pytest.mark.django_db(transaction=True)  # the notice is queued on commit, for a cluster in another process
def test_the_requester_is_told_of_a_decision_but_not_of_their_own_withdrawal(
    alice_api, bob_api, bob, globex, support, mailbox
):
    make_member(globex, "carol@globex.test", "reviewer")  # a member, but of another workspace
    withdrawn = make_approval(support, requested_by="BOB@acme.test")
    strangers = make_approval(support, requested_by="carol@globex.test")
    decided = make_approval(support, requested_by="BOB@acme.test")
    nobodys = make_approval(support)
    cluster = Cluster(EMAIL_URL=f"smtp://127.0.0.1:{mailbox.port}").start()
    try:
        assert bob_api.post(f"/api/v1/approvals/{withdrawn.public_id}/withdraw", json={}).status_code == 200
        for approval in (strangers, nobodys):
            assert alice_api.post(f"/api/v1/approvals/{approval.public_id}/decision", json={"decision": "approve"})
        rejected = alice_api.post(
            f"/api/v1/approvals/{decided.public_id}/decision",
            json={"decision": "reject", "reason": "Not this customer."},
        )
        assert rejected.status_code == 200, rejected.text
        wait_for(lambda: mailbox.messages, timeout=20, what="the requester's notice")
        wait_for(lambda: not OrmQ.objects.exists(), timeout=20, what="the cluster to take every queued notice")
        wait_for(lambda: Task.objects.filter(func=TASK).count() == 2, timeout=20, what="both notices to run")
    finally:
        cluster.stop()
    # Queued for the two ends asked for someone; the withdrawal and the request asked for nobody queue none.
    results = dict(Task.objects.filter(func=TASK).values_list("args", "result"))
    assert results == {(decided.pk,): ["email"], (strangers.pk,): []}  # Carol is no member of acme
    [(recipients, message)] = mailbox.messages
    assert recipients == ["bob@acme.test"]
    assert message["Subject"].startswith("Rejected: ")
    body = message.get_payload()
    assert "on your behalf" in body and "Not this customer." in body
    assert f"/hitl/approvals/{decided.public_id}/" in body
