"""Expiry fails closed: on read with no worker, by the sweep, and against a late decision."""

import threading
from datetime import timedelta
from importlib import import_module

import pytest
from django.apps import apps
from django.db import connection, transaction
from django_q.models import Schedule

from approvals import tasks
from approvals.expiry.expire import approval_expire_if_overdue, approval_sweep_overdue, expire_requests
from approvals.models import EXPIRED_REASON, ApprovalRequest, Status
from approvals.presenters.api import approval_as_dict
from approvals.review.decide import approval_decide
from audit.models import AuditRecord
from audit.services import audit_append
from tests.factories import make_approval, make_many, make_token_cap
from tests.helpers import make_config, travel


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent")


def test_it_reads_an_overdue_request_as_expired_with_no_worker(bob_api, support):
    approval = make_approval(support, ttl=timedelta(hours=1))
    with travel(timedelta(hours=1, seconds=1)):
        expired = bob_api.get("/api/v1/approvals?status=expired").json()["results"]
        pending = bob_api.get("/api/v1/approvals?status=pending").json()["results"]
    assert [row["id"] for row in expired] == [approval.public_id]
    assert expired[0]["status"] == "expired"
    assert expired[0]["decision"]["expired"] is True and expired[0]["decision"]["reason"] == EXPIRED_REASON
    assert pending == []
    # Nothing was written: the read alone says expired.
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING


def test_it_expires_a_request_24_hours_after_it_was_made(bob_api, support):
    approval = make_approval(support)
    with travel(timedelta(hours=23, minutes=59)):
        assert bob_api.get("/api/v1/approvals?status=pending").json()["results"][0]["id"] == approval.public_id
    with travel(timedelta(hours=24, seconds=1)):
        assert bob_api.get("/api/v1/approvals?status=pending").json()["results"] == []


def test_it_sweeps_overdue_requests_and_leaves_the_rest(support, bob):
    overdue = make_approval(support, ttl=timedelta(minutes=5))
    cap = make_token_cap(support, ttl=timedelta(minutes=5))
    fresh = make_approval(support, ttl=timedelta(hours=2))
    decided = make_approval(support, ttl=timedelta(minutes=5))
    approval_decide(approval=decided, user=bob, decision="approve", reason="fine")
    with travel(timedelta(minutes=10)):
        assert tasks.sweep_overdue() == 2
        assert tasks.sweep_overdue() == 0  # safe to run twice
    rows = {a.pk: a for a in ApprovalRequest.objects.all()}
    assert rows[overdue.pk].status == Status.EXPIRED and rows[overdue.pk].reason == EXPIRED_REASON
    assert rows[overdue.pk].decided_at == overdue.expires_at and rows[overdue.pk].decided_by is None
    assert approval_as_dict(rows[cap.pk])["decision"]["action"] == "stop_run"
    assert rows[fresh.pk].status == Status.PENDING
    assert (rows[decided.pk].status, rows[decided.pk].reason) == (Status.APPROVED, "fine")


def test_a_request_read_past_its_deadline_is_expired_alone_by_the_same_statement(support):
    """The expiry statement narrowed to given requests: only they expire, each with its record."""
    overdue, neighbour = (
        make_approval(support, ttl=timedelta(minutes=5)),
        make_approval(support, ttl=timedelta(minutes=5)),
    )
    fresh = make_approval(support, ttl=timedelta(hours=2))
    with travel(timedelta(minutes=10)):
        expired = approval_expire_if_overdue(approval=overdue)
        assert (expired.status, expired.reason, expired.decided_at) == (
            Status.EXPIRED,
            EXPIRED_REASON,
            overdue.expires_at,
        )
        assert ApprovalRequest.objects.get(pk=neighbour.pk).status == Status.PENDING  # overdue too, not asked
        assert expire_requests(ApprovalRequest.objects.filter(pk__in=[neighbour.pk, fresh.pk])) == 1
        assert expire_requests(ApprovalRequest.objects.filter(pk=neighbour.pk)) == 0  # once
    records = AuditRecord.objects.filter(action="approval.expired").values_list("object", "actor")
    assert sorted(records) == sorted([(overdue.public_id, "system"), (neighbour.public_id, "system")])
    assert ApprovalRequest.objects.get(pk=fresh.pk).status == Status.PENDING


def test_it_sweeps_in_batches_until_nothing_is_overdue(support, monkeypatch):
    monkeypatch.setattr(tasks, "SWEEP_BATCH", 100)
    make_many(support, 250, ttl=timedelta(minutes=1))
    with travel(timedelta(minutes=2)):
        assert approval_sweep_overdue(batch_size=100) == 100
        assert tasks.sweep_overdue() == 150
    assert not ApprovalRequest.objects.filter(status=Status.PENDING).exists()


def test_it_schedules_the_sweep_every_minute_once(db):
    # A live-server test before this one may have flushed the row the migration made: run it again.
    migration = import_module("approvals.migrations.0002_sweep_schedule")
    migration.create_schedule(apps, None)
    migration.create_schedule(apps, None)  # idempotent by name
    schedule = Schedule.objects.get(func="approvals.tasks.sweep_overdue")
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == (Schedule.MINUTES, 1, -1)


def test_it_overwrites_no_decision_while_sweeps_and_decisions_run_at_once(transactional_db, support, bob):
    """Two sweeps and a reviewer race over 300 requests: each ends decided or expired, never both."""
    due = make_many(support, 150, ttl=timedelta(minutes=1))  # overdue once the clock moves
    live = make_many(support, 150, ttl=timedelta(hours=2))  # still decidable
    errors: list[BaseException] = []
    with travel(timedelta(minutes=5)):
        barrier = threading.Barrier(3)

        def sweep() -> None:
            try:
                barrier.wait(timeout=10)
                while approval_sweep_overdue(batch_size=10):
                    pass
            except BaseException as error:  # noqa: B036
                errors.append(error)
            finally:
                connection.close()

        def decide_all() -> None:
            try:
                barrier.wait(timeout=10)
                for approval in [*due, *live]:
                    approval_decide(approval=approval, user=bob, decision="approve", reason="ok")
            except BaseException as error:  # noqa: B036
                errors.append(error)
            finally:
                connection.close()

        threads = [threading.Thread(target=sweep), threading.Thread(target=sweep), threading.Thread(target=decide_all)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert not errors, errors
    due_rows = ApprovalRequest.objects.filter(pk__in=[a.pk for a in due])
    live_rows = ApprovalRequest.objects.filter(pk__in=[a.pk for a in live])
    assert set(due_rows.values_list("status", "reason")) == {(Status.EXPIRED, EXPIRED_REASON)}
    assert set(live_rows.values_list("status", "reason", "decided_by_email")) == {
        (Status.APPROVED, "ok", "bob@acme.test")
    }


def test_it_skips_a_row_being_decided_instead_of_waiting_for_it(transactional_db, support):
    locked = make_approval(support, ttl=timedelta(minutes=1))
    other = make_approval(support, ttl=timedelta(minutes=1))
    holding, release = threading.Event(), threading.Event()

    def hold_lock() -> None:
        with transaction.atomic():
            ApprovalRequest.objects.select_for_update().get(pk=locked.pk)
            holding.set()
            release.wait(timeout=10)
        connection.close()

    thread = threading.Thread(target=hold_lock)
    thread.start()
    try:
        assert holding.wait(timeout=10)
        with travel(timedelta(minutes=2)):
            assert approval_sweep_overdue() == 1  # returns at once: the locked row is left for later
        assert ApprovalRequest.objects.get(pk=other.pk).status == Status.EXPIRED
    finally:
        release.set()
        thread.join()
    with travel(timedelta(minutes=2)):
        assert approval_sweep_overdue() == 1
    assert ApprovalRequest.objects.get(pk=locked.pk).status == Status.EXPIRED


def test_an_expired_requests_audit_record_names_its_deadline_as_python_writes_it(support):
    """The expiry statement writes its `approval.expired` records itself (the one form of that payload):
    by the system, at the sweep's moment, the deadline as datetime.isoformat() writes it — without
    microseconds when there are none — and as jsonb stores the same dict written by audit_append."""
    requests = make_many(support, 3, ttl=timedelta(minutes=1))
    cap = make_token_cap(support, ttl=timedelta(minutes=1))
    # A whole-second deadline: Python's isoformat() then leaves out the microseconds.
    whole = requests[0].expires_at.replace(microsecond=0)
    ApprovalRequest.objects.filter(pk=requests[0].pk).update(expires_at=whole)
    before = AuditRecord.objects.order_by("-id").values_list("id", flat=True).first() or 0
    with travel(timedelta(minutes=5)) as now:
        assert approval_sweep_overdue() == 4

    rows = AuditRecord.objects.filter(id__gt=before, action="approval.expired").order_by("object")
    deadlines = dict(
        ApprovalRequest.objects.filter(pk__in=[a.pk for a in [*requests, cap]]).values_list("public_id", "expires_at")
    )
    swept = list(rows.values_list("workspace_id", "at", "actor", "object", "data"))
    assert sorted(row[3] for row in swept) == sorted(deadlines)
    for workspace_id, at, actor, public_id, data in swept:
        assert (workspace_id, at, actor) == (support.workspace_id, now, "system")
        assert data == {"expires_at": deadlines[public_id].isoformat()}
    assert "." not in whole.isoformat() and {"expires_at": whole.isoformat()} in [row[4] for row in swept]
    # Byte for byte what the ORM's append writes for the same payload.
    first_ids = list(rows.filter(object=requests[0].public_id).values_list("pk", flat=True))
    expired_first = AuditRecord.objects.filter(pk__in=first_ids)
    middle = AuditRecord.objects.order_by("-id").values_list("id", flat=True).first()
    audit_append(
        workspace_id=support.workspace_id,
        actor="system",
        action="approval.expired",
        object=requests[0].public_id,
        data={"expires_at": whole.isoformat()},
        at=now,
    )
    written = AuditRecord.objects.filter(id__gt=middle)
    assert _texts(written) == _texts(expired_first)


def _texts(rows) -> list[str]:
    """Each record's payload as PostgreSQL stores it (jsonb's text), in the rows' order."""
    with connection.cursor() as cursor:
        ids = list(rows.values_list("id", flat=True))
        cursor.execute("SELECT id, data::text FROM audit_auditrecord WHERE id = ANY(%s)", [ids])
        text = dict(cursor.fetchall())
    return [text[i] for i in ids]
