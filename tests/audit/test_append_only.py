"""History the database refuses to rewrite: audit records, and decided approval requests (in SQL)."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction

from approvals.engine.outcome import approval_report_outcome
from approvals.expiry.expire import approval_sweep_overdue
from approvals.models import ApprovalRequest, Status
from approvals.review.decide import approval_decide
from audit.services import audit_append
from tests.factories import make_approval
from tests.helpers import make_config, travel

REFUSED = (IntegrityError,)


def sql(statement: str, params: list) -> int:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent")


def test_the_database_refuses_to_update_or_delete_an_audit_record(acme):
    audit_append(workspace_id=acme.pk, actor="system", action="test.appended", object="x")

    with pytest.raises(REFUSED, match="Audit records are never changed or deleted"):
        sql("UPDATE audit_auditrecord SET actor = 'mallory' WHERE workspace_id = %s", [acme.pk])
    with pytest.raises(REFUSED, match="Audit records are never changed or deleted"):
        sql("DELETE FROM audit_auditrecord WHERE workspace_id = %s", [acme.pk])
    assert not ApprovalRequest.objects.exists()  # (nothing else was touched)
    from audit.models import AuditRecord

    assert AuditRecord.objects.filter(workspace=acme, actor="mallory").count() == 0
    assert AuditRecord.objects.filter(workspace=acme, action="test.appended").count() == 1


def test_a_sealed_record_cannot_be_sealed_again_nor_a_record_changed_while_sealing(acme):
    from audit.services import audit_seal

    audit_append(workspace_id=acme.pk, actor="system", action="test.appended", object="x")
    with pytest.raises(REFUSED, match="never changed"):
        sql(
            "UPDATE audit_auditrecord SET seq = 99, prev_hash = 'a', hash = 'b', actor = 'mallory' "
            "WHERE workspace_id = %s AND hash IS NULL",
            [acme.pk],
        )
    audit_seal(workspace_id=acme.pk)
    with pytest.raises(REFUSED, match="never changed"):
        sql("UPDATE audit_auditrecord SET hash = repeat('0', 64) WHERE workspace_id = %s", [acme.pk])


def test_a_workspace_with_history_cannot_be_deleted(acme):
    from django.db.models import ProtectedError

    audit_append(workspace_id=acme.pk, actor="system", action="test.appended", object="x")
    with pytest.raises(ProtectedError):
        acme.delete()


@pytest.mark.parametrize("decision", ["approve", "reject"])
def test_the_database_refuses_to_rewrite_or_delete_a_decided_request(support, bob, decision):
    approval = make_approval(support)
    approval_decide(approval=approval, user=bob, decision=decision, reason="checked")

    for statement in [
        "UPDATE approvals_approvalrequest SET status = 'pending' WHERE id = %s",
        "UPDATE approvals_approvalrequest SET reason = 'never mind' WHERE id = %s",
        "UPDATE approvals_approvalrequest SET decided_by_email = 'mallory@acme.test' WHERE id = %s",
        "UPDATE approvals_approvalrequest SET target = 'someone else' WHERE id = %s",
        "DELETE FROM approvals_approvalrequest WHERE id = %s",
    ]:
        with pytest.raises(REFUSED, match="A decided approval request is never|never changes"):
            sql(statement, [approval.pk])

    approval.refresh_from_db()
    assert approval.reason == "checked" and approval.decided_by_email == "bob@acme.test"


def test_an_approved_request_takes_its_outcome_once_and_then_nothing(support, bob):
    approval = make_approval(support)
    approval_decide(approval=approval, user=bob, decision="approve")

    approval_report_outcome(approval=approval, status="executed", execution_id="exe_1")

    with pytest.raises(REFUSED, match="never changes"):
        sql("UPDATE approvals_approvalrequest SET execution_status = 'failed' WHERE id = %s", [approval.pk])
    approval.refresh_from_db()
    assert (approval.execution_status, approval.execution_id) == ("executed", "exe_1")


def test_a_rejected_request_never_takes_an_outcome_even_in_sql(support, bob):
    approval = make_approval(support)
    approval_decide(approval=approval, user=bob, decision="reject", reason="no")

    with pytest.raises(REFUSED, match="never changes"):
        sql("UPDATE approvals_approvalrequest SET execution_status = 'executed' WHERE id = %s", [approval.pk])


def test_pending_requests_still_change_and_the_sweep_still_expires_them(support):
    approval = make_approval(support, ttl=timedelta(minutes=5))
    assert sql("UPDATE approvals_approvalrequest SET caller = 'other-bot' WHERE id = %s", [approval.pk]) == 1

    with travel(timedelta(minutes=6)):
        assert approval_sweep_overdue() == 1

    approval.refresh_from_db()
    assert approval.status == Status.EXPIRED
    with pytest.raises(REFUSED, match="never changes"):
        sql("UPDATE approvals_approvalrequest SET status = 'approved' WHERE id = %s", [approval.pk])


def test_a_pending_request_may_still_be_deleted(support):
    approval = make_approval(support)
    assert sql("DELETE FROM approvals_approvalrequest WHERE id = %s", [approval.pk]) == 1
