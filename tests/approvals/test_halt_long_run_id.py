"""Every run an engine can register can be halted: a run id up to the registration's 500 characters, by the
API and by `hitl halt`; one longer is refused as input (400, or the CLI's one-line message), never a 500."""

from io import StringIO
from urllib.parse import quote

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from approvals.models import Halt
from audit.models import AuditRecord
from tests.factories import make_approval
from tests.helpers import error_of, make_config

LONG_RUN = "run-" + "x" * 496  # 500 characters, as long as a registration's run_id may be


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent")


def test_a_run_with_a_long_id_is_halted_and_resumed_through_the_api(bob_api, support):
    pending = make_approval(support, run_id=LONG_RUN)

    response = bob_api.post("/api/v1/runs/halt", json={"run_id": LONG_RUN, "reason": "Runaway loop"})

    assert response.status_code == 200, response.text
    assert response.json()["run_id"] == LONG_RUN
    pending.refresh_from_db()
    assert (pending.status, pending.decision_action) == ("rejected", "halt")
    assert AuditRecord.objects.get(action="run.halted").object == LONG_RUN
    assert bob_api.delete(f"/api/v1/runs/halt/{LONG_RUN}").status_code == 204
    assert not Halt.objects.in_force().exists()


def test_a_run_whose_id_has_a_line_break_or_a_slash_is_resumed_through_the_api(bob_api, support):
    run_id = "batch/7\nretry"
    make_approval(support, run_id=run_id)
    assert bob_api.post("/api/v1/runs/halt", json={"run_id": run_id, "reason": "Runaway loop"}).status_code == 200

    assert bob_api.delete(f"/api/v1/runs/halt/{quote(run_id, safe='')}").status_code == 204
    assert not Halt.objects.in_force().exists()


def test_a_run_id_longer_than_any_registration_is_refused_naming_it(bob_api, support):
    response = bob_api.post("/api/v1/runs/halt", json={"run_id": LONG_RUN + "y", "reason": "Runaway loop"})

    assert response.status_code == 400
    assert "run_id" in error_of(response)["fields"]
    assert not Halt.objects.exists()


def test_hitl_halt_takes_a_long_run_id_and_refuses_a_longer_one_in_one_line(support, bob):
    make_approval(support, run_id=LONG_RUN)
    out = StringIO()

    call_command("hitl", "halt", LONG_RUN, "--workspace", "acme", "--as", "bob@acme.test", "--reason", "x", stdout=out)

    assert "1 pending request(s) rejected" in out.getvalue()
    with pytest.raises(CommandError, match="at most 500 characters"):
        call_command("hitl", "halt", LONG_RUN + "y", "--workspace", "acme", "--as", "bob@acme.test", "--reason", "x")
    with pytest.raises(CommandError, match="at most 500 characters"):
        call_command("hitl", "resume", LONG_RUN + "y", "--workspace", "acme", "--as", "bob@acme.test")
