"""`hitl halt`, `hitl resume`, `hitl freeze`, `hitl thaw`: the API's halting on the host, on the same rules."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from approvals.models import ApprovalRequest, Halt
from audit.models import AuditRecord
from tests.factories import make_approval
from tests.helpers import make_config


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent")


def hitl(*args) -> str:
    out = StringIO()
    call_command("hitl", *args, stdout=out)
    return out.getvalue()


def test_halt_rejects_the_runs_pending_requests_and_resume_lifts_it(support, bob):
    mine = [make_approval(support, run_id="run_9", target=f"customer T-{i}") for i in range(2)]
    other = make_approval(support, run_id="run_1")

    out = hitl("halt", "run_9", "--workspace", "acme", "--as", "bob@acme.test", "--reason", "Runaway loop")

    assert "Run run_9 halted in acme: 2 pending request(s) rejected" in out
    for approval in mine:
        approval.refresh_from_db()
        assert (approval.status, approval.decision_action, approval.reason) == ("rejected", "halt", "Runaway loop")
        assert approval.decided_by_email == "bob@acme.test"
    other.refresh_from_db()
    assert other.status == "pending"
    assert Halt.objects.in_force().get().run_id == "run_9"

    assert "resumed" in hitl("resume", "run_9", "--workspace", "acme", "--as", "bob@acme.test")
    assert "was not halted" in hitl("resume", "run_9", "--workspace", "acme", "--as", "bob@acme.test")
    assert not Halt.objects.in_force().exists()
    records = AuditRecord.objects.filter(action__startswith="run.").order_by("id")
    assert list(records.values_list("action", flat=True)) == ["run.halted", "run.resumed"]


def test_halt_is_refused_to_a_stranger_and_without_a_reason(support, bob, globex):
    from tests.helpers import make_member

    make_member(globex, "gus@globex.test", "admin")
    with pytest.raises(CommandError, match="not a reviewer or admin of acme"):
        hitl("halt", "run_9", "--workspace", "acme", "--as", "gus@globex.test", "--reason", "x")
    with pytest.raises(CommandError, match="Say why"):
        hitl("halt", "run_9", "--workspace", "acme", "--as", "bob@acme.test", "--reason", "  ")
    with pytest.raises(CommandError, match="No config"):
        hitl("halt", "run_9", "--workspace", "acme", "--as", "bob@acme.test", "--reason", "x", "--config", "cfg_no")
    assert not Halt.objects.exists()


def test_freeze_is_for_admins_and_thaw_lifts_it(support, alice, bob):
    pending = make_approval(support)

    with pytest.raises(CommandError, match="only admins freeze"):
        hitl("freeze", "acme", "--as", "bob@acme.test", "--reason", "Incident")
    out = hitl("freeze", "acme", "--as", "alice@acme.test", "--reason", "Incident 42")

    assert "acme frozen: 1 pending request(s) rejected" in out
    assert ApprovalRequest.objects.get(pk=pending.pk).reason == "Incident 42"
    assert "thawed" in hitl("thaw", "acme", "--as", "alice@acme.test")
    assert "was not frozen" in hitl("thaw", "acme", "--as", "alice@acme.test")
