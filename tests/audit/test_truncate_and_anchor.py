"""History cannot be emptied wholesale, the chain's head only moves forward, and an anchor noted
outside the database catches the attack that needs neither: emptying the log with the triggers off."""

import pytest
from django.core.management import call_command
from django.db import IntegrityError, connection, transaction

from approvals.models import ApprovalRequest
from audit.models import AuditHead
from audit.selectors import audit_head
from audit.services import audit_append, audit_seal
from tests.factories import make_approval
from tests.helpers import make_config, make_token
from workspaces.models import Workspace


def sql(statement: str, params: list | None = None) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        # The test's own inserts leave foreign-key checks pending, and TRUNCATE refuses to run past them.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(statement, params)


def as_superuser_without_triggers(statement: str, params: list | None = None) -> None:
    # What an attacker holding the database's superuser can do: switch the triggers off.
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET session_replication_role = replica")
        try:
            cursor.execute(statement, params)
        finally:
            cursor.execute("SET session_replication_role = DEFAULT")


def verify(capsys, *args: str) -> tuple[int, str]:
    try:
        call_command("hitl", "audit", "verify", "--workspace", "acme", *args)
    except SystemExit as exit:
        return exit.code, capsys.readouterr().err
    return 0, capsys.readouterr().out


def sealed(acme, count: int) -> tuple[int, str]:
    for n in range(count):
        audit_append(workspace_id=acme.pk, actor="system", action="test.appended", object=str(n))
    audit_seal(workspace_id=acme.pk)
    return audit_head(workspace_id=acme.pk)


@pytest.mark.parametrize("table", ["audit_auditrecord", "audit_audithead", "rules_configversion"])
def test_the_database_refuses_to_truncate_history(acme, table):
    sealed(acme, 3)
    with pytest.raises(IntegrityError, match="History is never truncated"):
        sql(f"TRUNCATE {table} CASCADE")


def test_decided_requests_cannot_be_truncated_while_pending_ones_can(acme):
    config = make_config(acme)
    pending = make_approval(config)
    sql("TRUNCATE approvals_approvalrequest CASCADE")  # nothing decided: nothing is history yet
    assert not ApprovalRequest.objects.filter(pk=pending.pk).exists()

    decided = make_approval(config)
    ApprovalRequest.objects.filter(pk=decided.pk).update(status="rejected")
    with pytest.raises(IntegrityError, match="Decided approval requests are never truncated"):
        sql("TRUNCATE approvals_approvalrequest CASCADE")
    assert ApprovalRequest.objects.filter(pk=decided.pk).exists()


def test_the_head_only_moves_forward(acme):
    seq, hash_ = sealed(acme, 4)
    for statement in [
        "UPDATE audit_audithead SET seq = 0, hash = repeat('0', 64) WHERE workspace_id = %s",
        "UPDATE audit_audithead SET seq = seq - 1 WHERE workspace_id = %s",
        "UPDATE audit_audithead SET hash = repeat('a', 64) WHERE workspace_id = %s",
        "DELETE FROM audit_audithead WHERE workspace_id = %s",
    ]:
        with pytest.raises(IntegrityError, match="audit head of workspace"):
            sql(statement, [acme.pk])
    assert audit_head(workspace_id=acme.pk) == (seq, hash_)
    sealed(acme, 1)  # sealing still advances it
    assert audit_head(workspace_id=acme.pk)[0] == seq + 1


def test_a_head_that_never_sealed_anything_goes_with_its_workspace(db):
    empty = Workspace.objects.create(slug="empty", name="Empty")
    audit_seal(workspace_id=empty.pk)  # nothing to seal: the head is created at 0
    empty.delete()
    assert not AuditHead.objects.filter(pk=empty.pk).exists()


def test_verify_with_the_anchor_detects_the_truncate_and_reset_attack(acme, capsys):
    seq, hash_ = sealed(acme, 6)
    anchor = f"{seq}:{hash_[:16]}"
    assert verify(capsys, "--anchor", anchor) == (0, f"{seq} records, chain intact, anchor {seq} holds\n")

    as_superuser_without_triggers("TRUNCATE audit_auditrecord")
    as_superuser_without_triggers(
        "UPDATE audit_audithead SET seq = 0, hash = repeat('0', 64) WHERE workspace_id = %s", [acme.pk]
    )

    assert verify(capsys) == (0, "0 records, chain intact\n")  # without an anchor nothing can tell
    code, message = verify(capsys, "--anchor", anchor)
    assert code == 1
    assert f"record {seq} is missing" in message and "emptied, cut short or rewritten" in message


def test_verify_with_the_anchor_detects_a_chain_rebuilt_from_scratch(acme, capsys):
    seq, hash_ = sealed(acme, 3)
    as_superuser_without_triggers("DELETE FROM audit_auditrecord WHERE workspace_id = %s", [acme.pk])
    as_superuser_without_triggers("DELETE FROM audit_audithead WHERE workspace_id = %s", [acme.pk])
    sealed(acme, 3)  # a fresh chain of the same length: intact, but not the one the anchor saw

    code, message = verify(capsys, "--anchor", f"{seq}:{hash_}")
    assert code == 1 and f"record {seq} has hash" in message


@pytest.mark.parametrize("anchor", ["3", "x:abc", "3:abc", "3:" + "g" * 16])
def test_a_malformed_anchor_exits_2_with_one_line(acme, anchor, capsys):
    with pytest.raises(SystemExit) as exit:
        from django.core.management import execute_from_command_line

        execute_from_command_line(["manage.py", "hitl", "audit", "verify", "--workspace", "acme", "--anchor", anchor])
    assert exit.value.code == 2
    assert "SEQ:HASH" in capsys.readouterr().err


def test_every_export_and_the_history_page_give_the_anchor(client, acme, alice):
    seq, hash_ = sealed(acme, 2)
    response = client.get("/api/v1/audit?format=csv", HTTP_AUTHORIZATION=f"Bearer {make_token(acme, user=alice)}")
    b"".join(response.streaming_content)
    head_seq, head_hash = audit_head(workspace_id=acme.pk)  # the export seals first
    assert response["Audit-Chain-Head"] == f"{head_seq}:{head_hash}"
    assert head_seq >= seq

    client.force_login(alice)
    page = client.get("/hitl/approvals/history/")
    assert f"{head_seq}:{head_hash[:16]}" in page.content.decode()
