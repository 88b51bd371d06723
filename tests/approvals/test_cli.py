"""`hitl pending`, `hitl approve`, `hitl deny`: the reviewer's queue on the host, on the same rules."""

import os
import subprocess
import sys
from datetime import timedelta
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command, execute_from_command_line
from django.core.management.base import CommandError

from approvals.models import EXPIRED_REASON, ApprovalRequest, Status
from tests.factories import make_approval, make_token_cap
from tests.helpers import make_config, make_member, travel
from tests.loopback import database_url


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent")


def hitl(*args) -> str:
    out = StringIO()
    call_command("hitl", *args, stdout=out)
    return out.getvalue()


def test_it_lists_pending_requests_oldest_first(support, globex):
    now = support.created_at
    newer = make_approval(support, target="customer T-2", created_at=now + timedelta(minutes=1))
    older = make_approval(support, target="customer T-1", created_at=now)
    theirs = make_approval(make_config(globex, "Theirs"), target="customer X")
    make_approval(support, status=Status.APPROVED)
    make_approval(support, target="customer overdue", created_at=now - timedelta(days=2))  # expired on read
    out = hitl("pending", "--workspace", "acme")
    lines = out.splitlines()
    assert [line.split("\t")[0] for line in lines] == [older.public_id, newer.public_id]
    assert "Delete customer T-1" in lines[0] and f"{support.public_id}@1" in lines[0]
    assert theirs.public_id in hitl("pending")


def test_it_says_when_nothing_is_pending(support):
    assert hitl("pending").strip() == "No pending requests."


def test_it_approves_with_a_note_and_records_who(support, bob):
    approval = make_approval(support)
    out = hitl("approve", approval.public_id, "--as", "bob@acme.test", "--note", "Checked with the customer")
    assert out.startswith("Approved by bob@acme.test at")
    row = ApprovalRequest.objects.get(pk=approval.pk)
    assert (row.status, row.decision_action, row.decided_by, row.reason) == (
        "approved",
        "resume",
        bob,
        "Checked with the customer",
    )


def test_it_denies_with_a_reason_and_stops_a_token_cap_run(support, alice):
    gate, cap = make_approval(support), make_token_cap(support)
    hitl("deny", gate.public_id, "--as", "alice@acme.test", "--reason", "Wrong customer")
    hitl("deny", cap.public_id, "--as", "alice@acme.test", "--reason", "Too expensive")
    assert ApprovalRequest.objects.get(pk=gate.pk).reason == "Wrong customer"
    assert ApprovalRequest.objects.get(pk=cap.pk).decision_action == "stop_run"


def test_it_prints_the_first_decision_when_already_decided(support, alice, bob):
    approval = make_approval(support)
    hitl("approve", approval.public_id, "--as", "alice@acme.test")
    out = hitl("deny", approval.public_id, "--as", "bob@acme.test", "--reason", "No")
    assert "was already approved by alice@acme.test at" in out and "nothing changed" in out
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.APPROVED


def test_it_answers_a_late_decision_with_the_expiry(support, bob):
    approval = make_approval(support, ttl=timedelta(minutes=1))
    with travel(timedelta(minutes=2)):
        out = hitl("approve", approval.public_id, "--as", "bob@acme.test")
    assert "Expired — nobody answered; counted as rejected" in out
    assert ApprovalRequest.objects.get(pk=approval.pk).reason == EXPIRED_REASON


def test_it_refuses_anyone_but_a_reviewer_of_that_workspace(support, charlie):
    approval = make_approval(support)
    with pytest.raises(CommandError, match="is not a reviewer or admin of acme"):
        hitl("approve", approval.public_id, "--as", "charlie@globex.test")
    with pytest.raises(CommandError, match="No user with email"):
        hitl("approve", approval.public_id, "--as", "nobody@acme.test")
    with pytest.raises(CommandError, match="No approval request 'apr_nope'"):
        hitl("approve", "apr_nope", "--as", "charlie@globex.test")
    with pytest.raises(CommandError, match="No workspace with slug"):
        hitl("pending", "--workspace", "nope")
    with pytest.raises(CommandError, match="keep it to 2,000"):
        make_member(support.workspace, "eve@acme.test", "reviewer")
        hitl("deny", approval.public_id, "--as", "eve@acme.test", "--reason", "x" * 2001)
    assert ApprovalRequest.objects.get(pk=approval.pk).status == Status.PENDING


def _run(*args) -> subprocess.CompletedProcess:
    env = {**os.environ, "DATABASE_URL": database_url()}
    return subprocess.run(
        [sys.executable, "manage.py", "hitl", *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_it_exits_2_with_one_line_on_a_bad_id_or_email(transactional_db, support, bob, capsys):
    approval = make_approval(support)
    for args, words in (
        (["approve", "apr_nope", "--as", "bob@acme.test"], "No approval request 'apr_nope'"),
        (["approve", approval.public_id, "--as", "ghost@acme.test"], "No user with email"),
        (["deny", approval.public_id, "--as", "bob@acme.test"], "--reason"),
    ):
        # manage.py's entry point in this process; the real process is the last call below.
        with pytest.raises(SystemExit) as exited:
            execute_from_command_line(["manage.py", "hitl", *args])
        err = capsys.readouterr().err
        assert exited.value.code == 2
        assert len(err.strip().splitlines()) == 1 and words in err, err
    result = _run("approve", approval.public_id, "--as", "bob@acme.test")
    assert result.returncode == 0 and result.stdout.startswith("Approved by bob@acme.test")
