"""Rule windows (API.md, "Policy"): an admin approves a whole rule until a time, with a reason."""

import datetime
import threading

import pytest
from django.utils import timezone

from approvals.models import ApprovalRequest, Grant
from audit.models import AuditRecord
from rules.models import Rule

from ..helpers import error_of, publish
from .engine_support import gate_body, make_support_config, rule_ids

pytestmark = pytest.mark.django_db


def until(**delta) -> str:
    return (timezone.now() + datetime.timedelta(**delta)).isoformat()


@pytest.fixture
def config(acme, alice):
    return make_support_config(acme, alice)


def open_window(api, config, rule: int = 0, **overrides):
    body = {"scope": "rule", "rule_id": rule_ids(config)[rule], "expires_at": until(hours=2), "reason": "Migration"}
    body.update(overrides)
    return api.post("/api/v1/grants", json=body)


def test_an_admin_opens_a_window_and_every_call_under_the_rule_is_stored_approved(alice_api, engine_api, config):
    opened = open_window(alice_api, config, reason="Backfill of the EU customers tonight")
    assert opened.status_code == 201, opened.json()
    window = opened.json()
    assert (window["scope"], window["run_id"], window["granted_by"]) == ("rule", None, "alice@acme.test")

    for run in ("run_1", "run_2"):
        registered = engine_api.post("/api/v1/approvals", json=gate_body(config, run_id=run))
        assert registered.status_code == 201
        body = registered.json()
        assert body["status"] == "approved"
        assert body["decision"]["grant_id"] == window["id"]
        assert body["decision"]["decided_by"] == "alice@acme.test"
        assert "Backfill of the EU customers tonight" in body["decision"]["reason"]
    other_rule = engine_api.post("/api/v1/approvals", json=gate_body(config, rule=1))
    assert other_rule.json()["status"] == "pending"  # the window is its rule's alone

    [listed] = [g for g in alice_api.get("/api/v1/grants?active=true").json()["results"] if g["id"] == window["id"]]
    assert listed["uses"] == 2 and listed["reason"] == "Backfill of the EU customers tonight"
    actions = list(AuditRecord.objects.filter(object=window["id"]).order_by("id").values_list("action", flat=True))
    assert actions == ["grant.created", "grant.used", "grant.used"]


def test_a_revoked_window_approves_nothing_more(alice_api, bob_api, engine_api, config):
    window = open_window(alice_api, config).json()
    assert engine_api.post("/api/v1/approvals", json=gate_body(config)).json()["status"] == "approved"
    assert bob_api.delete(f"/api/v1/grants/{window['id']}").status_code == 204  # a reviewer may close it
    assert engine_api.post("/api/v1/approvals", json=gate_body(config)).json()["status"] == "pending"
    assert AuditRecord.objects.filter(object=window["id"], action="grant.revoked").count() == 1


def test_it_refuses_a_window_beyond_seven_days_without_a_reason_or_on_no_rule(alice_api, bob_api, config, charlie_api):
    too_long = open_window(alice_api, config, expires_at=until(days=7, minutes=5))
    assert too_long.status_code == 400 and "expires_at" in error_of(too_long)["fields"]
    past = open_window(alice_api, config, expires_at=until(minutes=-1))
    assert past.status_code == 400 and "expires_at" in error_of(past)["fields"]
    blank = open_window(alice_api, config, reason="  ")
    assert blank.status_code == 400 and "reason" in error_of(blank)["fields"]
    unknown = open_window(alice_api, config, rule_id="rul_nosuchrule")
    assert unknown.status_code == 400 and "rule_id" in error_of(unknown)["fields"]
    run_scope = open_window(alice_api, config, scope="run")
    assert run_scope.status_code == 400 and "scope" in error_of(run_scope)["fields"]
    assert open_window(bob_api, config).status_code == 403  # reviewers do not open windows
    outsider = open_window(charlie_api, config)
    assert outsider.status_code == 400 and "rule_id" in error_of(outsider)["fields"]  # another workspace's rule
    assert not Grant.objects.exists()


@pytest.mark.live_http
@pytest.mark.django_db(transaction=True)
def test_a_window_racing_its_revocation_approves_nothing_registered_after_it_is_revoked(
    alice_api, bob_api, engine_api, config
):
    window = open_window(alice_api, config).json()
    before_revoke, after_revoke, errors = [], [], []
    revoked = threading.Event()
    start = threading.Barrier(5)

    def register(worker: int) -> None:
        start.wait()
        for i in range(6):
            seen_revoked = revoked.is_set()
            response = engine_api.post("/api/v1/approvals", json=gate_body(config, run_id=f"run_{worker}_{i}"))
            if response.status_code != 201:
                errors.append(response.text)
                continue
            (after_revoke if seen_revoked else before_revoke).append(response.json())

    def revoke() -> None:
        start.wait()
        assert bob_api.delete(f"/api/v1/grants/{window['id']}").status_code == 204
        revoked.set()

    threads = [threading.Thread(target=register, args=(n,)) for n in range(4)] + [threading.Thread(target=revoke)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors
    # Whatever registered after the revocation had answered pends: the window is shut at once.
    assert all(body["status"] == "pending" for body in after_revoke)
    approved = ApprovalRequest.objects.filter(grant_id=window["id"])
    assert all(body["status"] in ("approved", "pending") for body in before_revoke)
    # Each request the window approved is one counted use and one audited grant.used, none lost in the race.
    used = AuditRecord.objects.filter(object=window["id"], action="grant.used").count()
    assert approved.count() == used
    [listed] = [g for g in alice_api.get("/api/v1/grants").json()["results"] if g["id"] == window["id"]]
    assert listed["uses"] == used and listed["revoked_at"] is not None


def test_it_refuses_a_window_on_a_rule_that_needs_a_passkey_or_several_approvals(alice_api, acme, alice):
    config = make_support_config(acme, alice)
    passkey_rule, quorum_rule = rule_ids(config)[0], rule_ids(config)[1]
    Rule.objects.filter(public_id=passkey_rule).update(require_passkey=True)
    Rule.objects.filter(public_id=quorum_rule).update(approvals_required=2)
    for rule_id, needs in ((passkey_rule, "passkey"), (quorum_rule, "2 approvals")):
        refused = open_window(alice_api, config, rule_id=rule_id)
        assert refused.status_code == 400
        assert needs in error_of(refused)["fields"]["rule_id"]
    assert not Grant.objects.exists()


@pytest.mark.parametrize("stricter", [{"require_passkey": True}, {"approvals_required": 2}])
def test_a_window_opened_before_the_rule_grew_stricter_approves_nothing_under_the_stricter_version(
    alice_api, engine_api, acme, alice, stricter
):
    config = make_support_config(acme, alice)
    window = open_window(alice_api, config).json()
    assert engine_api.post("/api/v1/approvals", json=gate_body(config)).json()["status"] == "approved"

    Rule.objects.filter(public_id=rule_ids(config)[0]).update(**stricter)
    publish(config, alice)
    registered = engine_api.post("/api/v1/approvals", json=gate_body(config, version=2))
    assert registered.status_code == 201
    assert registered.json()["status"] == "pending"  # a person, with a passkey or a quorum, must decide
    assert registered.json()["decision"] is None
    assert AuditRecord.objects.filter(object=window["id"], action="grant.used").count() == 1
