"""The audit log's hash chain: recomputed independently, gapless, and `hitl audit verify` finds tampering."""

from datetime import UTC, timedelta

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from audit.models import AuditRecord
from audit.services import AuditEntry, audit_append, audit_append_many, audit_seal
from tests.helpers import make_token

from .helpers import assert_chain, export


def verify(slug: str, capsys) -> tuple[int, str]:
    try:
        call_command("hitl", "audit", "verify", "--workspace", slug)
    except SystemExit as exit:
        return exit.code, capsys.readouterr().err
    return 0, capsys.readouterr().out


def test_it_chains_records_so_an_independent_implementation_recomputes_every_hash(client, acme, alice):
    # One record appended alone, a batch in one INSERT: sealed into one chain by the export.
    audit_append(
        workspace_id=acme.pk,
        actor="alice@acme.test",
        action="rule.changed",
        object="rul_1",
        data={"note": "Zoë's “quoted” rule ✓", "nested": {"b": [1, 2.5, None, True], "a": "\n\t\\"}},
    )
    audit_append_many(
        entries=[
            AuditEntry(workspace_id=acme.pk, actor="system", action="approval.expired", object=f"apr_{n}")
            for n in range(3)
        ]
    )
    audit_append(workspace_id=acme.pk, actor="engine:support", action="approval.registered", object="apr_9", data={})

    records = export(client, make_token(acme, user=alice))

    assert_chain(records)
    # alice's membership (fixture) came first; then the five appended here and her token.
    assert [r["action"] for r in records][-6:-1] == ["rule.changed"] + ["approval.expired"] * 3 + [
        "approval.registered"
    ]
    assert records[-6]["data"]["note"] == "Zoë's “quoted” rule ✓"
    assert records[0]["at"].endswith("Z") and len(records[0]["at"]) == len("2026-11-30T05:40:00.123456Z")


def test_each_workspace_has_its_own_chain_from_seq_1(client, acme, alice, globex, charlie):
    audit_append(workspace_id=acme.pk, actor="system", action="x.acme", object="a")
    audit_append(workspace_id=globex.pk, actor="system", action="x.globex", object="g")

    acme_records = export(client, make_token(acme, user=alice))
    globex_records = export(client, make_token(globex, user=charlie))

    assert_chain(acme_records)
    assert_chain(globex_records)
    assert "x.globex" not in {r["action"] for r in acme_records}
    assert "x.acme" not in {r["action"] for r in globex_records}


def test_a_rolled_back_change_leaves_no_gap_in_seq(acme):
    before = AuditRecord.objects.filter(workspace=acme).count()
    with pytest.raises(RuntimeError), transaction.atomic():
        audit_append(workspace_id=acme.pk, actor="system", action="doomed", object="x")
        raise RuntimeError("the change failed")
    audit_append(workspace_id=acme.pk, actor="system", action="kept", object="y")
    audit_seal(workspace_id=acme.pk)

    seqs = list(AuditRecord.objects.filter(workspace=acme).values_list("seq", flat=True))
    assert seqs == list(range(1, before + 2))
    assert AuditRecord.objects.get(workspace=acme, seq=before + 1).action == "kept"


def test_audit_verify_says_the_chain_is_intact(acme, capsys):
    for n in range(5):
        audit_append(workspace_id=acme.pk, actor="system", action="test.appended", object=str(n))
    count = AuditRecord.objects.filter(workspace=acme).count()

    assert verify("acme", capsys) == (0, f"{count} records, chain intact\n")


def _tamper(sql: str, params: list) -> None:
    # The triggers refuse this; an attacker with the database's superuser can switch them off.
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        try:
            cursor.execute(sql, params)
        finally:
            cursor.execute("SET session_replication_role = DEFAULT")


@pytest.mark.parametrize(
    "tampering",
    [
        'UPDATE audit_auditrecord SET data = \'{"reason": "nothing to see"}\' WHERE workspace_id = %s AND seq = 4',
        "UPDATE audit_auditrecord SET actor = 'mallory@acme.test' WHERE workspace_id = %s AND seq = 4",
        "UPDATE audit_auditrecord SET at = at - interval '1 hour' WHERE workspace_id = %s AND seq = 4",
        "DELETE FROM audit_auditrecord WHERE workspace_id = %s AND seq = 4",
    ],
    ids=["data", "actor", "time", "deleted"],
)
def test_audit_verify_names_the_first_record_changed_in_sql(acme, capsys, tampering):
    for n in range(8):
        audit_append(workspace_id=acme.pk, actor="system", action="test.appended", object=str(n))
    audit_seal(workspace_id=acme.pk)
    _tamper(tampering, [acme.pk])

    code, message = verify("acme", capsys)

    assert code == 1
    assert "seq 4" in message


def test_audit_verify_notices_records_cut_off_the_end(acme, capsys):
    for n in range(5):
        audit_append(workspace_id=acme.pk, actor="system", action="test.appended", object=str(n))
    audit_seal(workspace_id=acme.pk)
    last = AuditRecord.objects.filter(workspace=acme).order_by("-seq").values_list("seq", flat=True)[0]
    _tamper("DELETE FROM audit_auditrecord WHERE workspace_id = %s AND seq = %s", [acme.pk, last])

    code, message = verify("acme", capsys)

    assert code == 1
    assert f"seq {last}" in message


def test_audit_verify_exits_2_for_an_unknown_workspace(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No workspace with slug 'nope'"):
        call_command("hitl", "audit", "verify", "--workspace", "nope")


def test_records_keep_the_time_they_were_appended_to_the_microsecond(client, acme, alice):
    at = timezone.now() - timedelta(minutes=3)
    audit_append(workspace_id=acme.pk, actor="system", action="timed", object="t", at=at)
    [record] = [r for r in export(client, make_token(acme, user=alice)) if r["action"] == "timed"]
    assert record["at"] == at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def test_records_are_sealed_in_the_order_they_were_appended_and_only_once(acme):
    for n in range(3):
        audit_append(workspace_id=acme.pk, actor="system", action="test.appended", object=str(n))
    assert AuditRecord.objects.filter(workspace=acme, hash__isnull=True).count() >= 3

    first = audit_seal(workspace_id=acme.pk)
    again = audit_seal(workspace_id=acme.pk)

    assert first >= 3 and again == 0
    rows = list(AuditRecord.objects.filter(workspace=acme).order_by("id").values_list("seq", flat=True))
    assert rows == list(range(1, len(rows) + 1))


def test_the_scheduled_task_seals_every_workspace(acme, globex):
    from audit.tasks import seal_all

    audit_append(workspace_id=acme.pk, actor="system", action="a", object="1")
    audit_append(workspace_id=globex.pk, actor="system", action="g", object="1")

    assert seal_all() >= 2
    assert not AuditRecord.objects.filter(hash__isnull=True).exists()
