"""The expiry sweep under faults: its cluster killed mid-sweep, and reviewers deciding while it runs."""

import random
import threading
import time
from datetime import timedelta

import requests
from django.db import connection
from django.utils import timezone

from approvals.models import ApprovalRequest
from bench.seed import insert_requests

from .conftest import wait_for


def seed(world, *, count: int, status: str, expires_after_s: int, tag: str, step_ms: int = 1) -> None:
    with connection.cursor() as cursor:
        insert_requests(
            cursor,
            workspace_id=world["workspace"].pk,
            config_id=world["config"].pk,
            config_version=world["version"].number,
            rule_id=world["rule"].public_id,
            engine_key_id=world["engine_key"].pk,
            count=count,
            status=status,
            created_from=timezone.now() - timedelta(days=2),
            created_step_ms=step_ms,
            expires_after_s=expires_after_s,
            tag=tag,
            decided_by_id=world["bob"].pk,
            decided_by_email="bob@acme.test",
        )


def count(**filters) -> int:
    return ApprovalRequest.objects.filter(**filters).count()


def test_it_loses_no_request_and_decides_none_twice_when_the_cluster_dies_mid_sweep(
    world, qcluster, status_audit, slow_expiry
):
    from django_q.tasks import async_task

    # Two days old with a one-day lifetime: 20,000 overdue requests for the sweep ...
    seed(world, count=20_000, status="pending", expires_after_s=24 * 3600, tag="overdue")
    # ... beside requests it must leave alone: decided before their deadline, and still in time.
    seed(world, count=300, status="approved", expires_after_s=24 * 3600, tag="approved")
    seed(world, count=300, status="pending", expires_after_s=3 * 24 * 3600, tag="waiting")
    approved_before = dict(ApprovalRequest.objects.filter(status="approved").values_list("pk", "decided_at"))
    slow_expiry(0.15)  # each batch holds its transaction open: the kill lands inside one

    async_task("approvals.tasks.sweep_overdue")
    qcluster.start()
    wait_for(lambda: count(status="expired") >= 2_000, timeout=60, what="the sweep to commit a few batches")
    qcluster.kill()
    expired_at_kill = count(status="expired")
    assert expired_at_kill < 20_000, "the sweep finished before the kill: the test did not test a mid-sweep death"

    # The batch in flight died with its connection and rolled back; the next run picks it up.
    slow_expiry(0)
    qcluster.start()
    async_task("approvals.tasks.sweep_overdue")  # the schedule's next run
    wait_for(lambda: count(status="expired") == 20_000, timeout=90, what="the restarted cluster to finish the sweep")
    time.sleep(1)  # a late duplicate would show up now

    assert count(status="expired") == 20_000
    assert count(status="pending") == 300
    assert dict(ApprovalRequest.objects.filter(status="approved").values_list("pk", "decided_at")) == approved_before
    audit = status_audit()
    assert len(audit) == 20_000, "every overdue request changed state exactly once"
    assert len({row[0] for row in audit}) == 20_000
    assert {(old, new) for _, old, new, _, _ in audit} == {("pending", "expired")}
    expired = ApprovalRequest.objects.filter(status="expired")
    assert not expired.filter(decided_by__isnull=False).exists()
    assert expired.exclude(decision_action="").count() == 0


def test_it_never_overwrites_a_decision_made_while_the_sweep_runs(world, portal_server, status_audit, slow_expiry):
    from approvals.expiry.expire import approval_sweep_overdue

    # 1,500 requests whose deadlines fall, one after another, over the next three seconds.
    seed(world, count=1_500, status="pending", expires_after_s=0, tag="race", step_ms=2)
    ApprovalRequest.objects.filter(public_id__startswith="apr_race").update(created_at=timezone.now())
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE approvals_approvalrequest SET expires_at = now() + make_interval(secs => 0.5 + "
            "substr(public_id, 9)::int * 0.002) WHERE public_id LIKE 'apr_race%%'"
        )
    ids = list(ApprovalRequest.objects.values_list("public_id", flat=True))
    random.Random(5).shuffle(ids)
    slow_expiry(0.05)  # sweep batches hold their locks while reviewers decide the same rows

    stop = threading.Event()
    swept = []

    def sweeper():
        from django.db import connections

        try:
            while not stop.is_set():
                swept.append(approval_sweep_overdue(batch_size=50))
                time.sleep(0.01)
        finally:
            connections.close_all()

    answers: dict[str, dict] = {}

    def reviewer(chunk: list[str]):
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {world['bob_token']}"
        for public_id in chunk:
            response = session.post(
                f"{portal_server}/api/v1/approvals/{public_id}/decision", json={"decision": "approve"}, timeout=30
            )
            assert response.status_code == 200, (public_id, response.status_code, response.text[:500])
            answers[public_id] = response.json()
            time.sleep(0.002)

    sweeping = threading.Thread(target=sweeper)
    sweeping.start()
    reviewers = [threading.Thread(target=reviewer, args=(ids[i::4],)) for i in range(4)]
    for thread in reviewers:
        thread.start()
    for thread in reviewers:
        thread.join(timeout=120)
    time.sleep(3.5)  # past every deadline: the sweep takes whatever nobody decided
    stop.set()
    sweeping.join(timeout=60)
    while approval_sweep_overdue(batch_size=500):
        pass

    final = {r.public_id: r for r in ApprovalRequest.objects.all()}
    assert len(answers) == len(final) == 1_500
    won = [i for i, body in answers.items() if not body.get("already_decided")]
    lost = [i for i, body in answers.items() if body.get("already_decided")]
    # Both sides won some rows: the race really happened.
    assert won and lost, (len(won), len(lost))
    assert sum(swept) > 0
    for public_id in won:
        assert final[public_id].status == "approved", public_id
        assert final[public_id].decided_by_email == "bob@acme.test"
    for public_id in lost:
        # The reviewer was told the first decision, and it is what the database holds.
        assert answers[public_id]["status"] == final[public_id].status == "expired", public_id
    audit = status_audit()
    assert len(audit) == 1_500, "each request was decided exactly once"
    assert len({row[0] for row in audit}) == 1_500
    assert {old for _, old, _, _, _ in audit} == {"pending"}
