"""Undeliverable: a request nobody could be told of, and nobody opened, ends as such under on_unreachable "reject"."""

from datetime import timedelta

import pytest

from approvals.engine import register as registration
from approvals.engine.register import Sent
from approvals.expiry.undeliverable import approval_sweep_undeliverable
from approvals.models import UNDELIVERABLE_REASON, ApprovalRequest
from approvals.tasks import sweep_overdue
from audit.models import AuditRecord
from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from contacts.services import contact_create
from tests.helpers import make_config, make_rule, make_token, publish, travel
from tests.insights.direct import facts_directly
from workspaces.models import ApiToken

AFTER = timedelta(seconds=601)  # HITL_UNDELIVERABLE_SECONDS (600) and a moment

# The outbox sends on threads with connections of their own: they must see what the test committed.
pytestmark = pytest.mark.django_db(transaction=True)


def world(workspace, *, on_unreachable="reject", channel_ref="${HITL_ACME_NOBODY_SET_THIS}", contacts=True):
    config = make_config(workspace, pass_information_level="summary")
    notify = []
    if contacts:
        hook = contact_create(
            config=config,
            name="On-call hook",
            channel="webhook",
            channel_ref=channel_ref,
            secret_ref="${HITL_ACME_ONCALL_SECRET}",
        )
        notify = [hook.public_id]
    rule = make_rule(config, notify=notify, on_unreachable=on_unreachable)
    version = publish(config)
    make_token(workspace, engine="support-engine")
    return {"workspace": workspace, "config": config, "rule": rule, "version": version}


def register(w, **fields) -> ApprovalRequest:
    engine_key = ApiToken.objects.filter(workspace=w["workspace"], kind="engine").first()
    return registration.register(
        workspace=w["workspace"],
        engine_key=engine_key,
        sent=Sent(
            kind="gate",
            config_id=w["config"].public_id,
            config_version=w["version"].number,
            rule_id=w["rule"].public_id,
            run_id="run_1",
            thread_id="thr_1",
            caller="support-bot",
            target="customer T-4821",
            operation="delete",
            **fields,
        ),
    ).approval


def test_a_request_nobody_could_be_told_of_ends_undeliverable_and_the_engine_is_told_so(acme, engine_api):
    w = world(acme)
    approval = register(w)
    deliveries_send_due()
    assert (
        Delivery.objects.get(approval=approval, event="requested").status == "failed"
    )  # HITL_ACME_NOBODY_SET_THIS is not set

    with travel(AFTER):
        assert sweep_overdue() == 1  # the minute's sweep ends it

    answer = engine_api.get(f"/api/v1/approvals/{approval.public_id}").json()
    assert answer["status"] == "expired"
    assert answer["decision"]["outcome"] == "rejected" and answer["decision"]["action"] == "halt"
    assert answer["decision"]["expired"] is True and answer["decision"]["undeliverable"] is True
    assert answer["decision"]["decided_by"] is None
    assert answer["decision"]["reason"] == UNDELIVERABLE_REASON
    assert "Nobody could be reached" in UNDELIVERABLE_REASON and "No person refused" in UNDELIVERABLE_REASON
    [record] = AuditRecord.objects.filter(action="approval.undeliverable", object=approval.public_id)
    assert record.actor == "system" and record.data == {"reason": "nobody could be reached", "after_seconds": 600}
    assert not AuditRecord.objects.filter(action="approval.expired", object=approval.public_id).exists()


def test_a_plain_expiry_is_not_undeliverable(acme, engine_api):
    w = world(acme, on_unreachable="wait")
    approval = register(w, ttl_seconds=900)
    deliveries_send_due()

    with travel(AFTER):
        sweep_overdue()
        assert engine_api.get(f"/api/v1/approvals/{approval.public_id}").json()["status"] == "pending"  # it waits
    with travel(timedelta(seconds=901)):
        sweep_overdue()
        decision = engine_api.get(f"/api/v1/approvals/{approval.public_id}").json()["decision"]

    assert decision["expired"] is True and decision["undeliverable"] is False
    assert decision["reason"].startswith("Nobody answered before the deadline")


def test_a_rule_without_contacts_that_says_reject_ends_undeliverable(acme):
    approval = register(world(acme, contacts=False))

    with travel(AFTER):
        assert approval_sweep_undeliverable() == 1

    assert ApprovalRequest.objects.get(pk=approval.pk).undeliverable is True


def test_nothing_ends_before_its_time(acme):
    approval = register(world(acme))
    deliveries_send_due()

    with travel(timedelta(seconds=590)):
        assert approval_sweep_undeliverable() == 0

    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"


def test_a_request_whose_notification_went_out_waits(acme, receiver, monkeypatch):
    monkeypatch.setenv("HITL_ACME_ONCALL_HOOK", receiver.url)
    monkeypatch.setenv("HITL_ACME_ONCALL_SECRET", receiver.secret)
    approval = register(world(acme, channel_ref="${HITL_ACME_ONCALL_HOOK}"))
    deliveries_send_due()
    receiver.wait_for(1, "requested")

    with travel(AFTER):
        assert approval_sweep_undeliverable() == 0

    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"


def test_a_notification_not_tried_yet_holds_it_back(acme):
    approval = register(world(acme))  # its delivery is due, but no worker has tried it yet

    with travel(AFTER):
        assert approval_sweep_undeliverable() == 0

    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"


def test_a_request_someone_opened_waits(acme, bob, client):
    approval = register(world(acme))
    deliveries_send_due()
    client.force_login(bob)

    assert client.get(f"/hitl/approvals/{approval.public_id}/").status_code == 200
    with travel(AFTER):
        assert approval_sweep_undeliverable() == 0

    approval.refresh_from_db()
    assert approval.status == "pending" and approval.opened_at is not None


def test_undeliverable_reads_apart_on_the_page_the_history_and_the_insights(acme, bob, client):
    approval = register(world(acme))
    deliveries_send_due()
    with travel(AFTER):
        approval_sweep_undeliverable()
    client.force_login(bob)

    page = client.get(f"/hitl/approvals/{approval.public_id}/").content.decode()
    history = client.get("/hitl/approvals/history/").content.decode()

    assert "Undeliverable — nobody could be reached; counted as rejected" in page
    assert "Expired — nobody answered" not in page
    assert 'class="badge expired undeliverable">Undeliverable</span> nobody could be reached' in history
    with travel(AFTER + timedelta(minutes=1)):
        from django.utils import timezone

        facts = facts_directly(workspace_id=acme.pk, reviewer=None, now=timezone.now())
    assert [(row["outcome"], row["count"]) for row in facts.rows] == [("undeliverable", 1)]


def test_a_decision_after_it_ended_changes_nothing(acme, bob):
    from approvals.review.decide import approval_decide

    approval = register(world(acme))
    deliveries_send_due()
    with travel(AFTER):
        approval_sweep_undeliverable()

    approval, already = approval_decide(approval=approval, user=bob, decision="approve")

    assert already is True and approval.status == "expired" and approval.undeliverable


def test_an_engine_waiting_on_it_is_woken_with_the_undeliverable_answer(acme, live_server, engine_api):
    import threading

    approval = register(world(acme))
    deliveries_send_due()
    answered: dict = {}

    def long_poll() -> None:
        answered["approval"] = engine_api.get(f"/api/v1/approvals/{approval.public_id}", params={"wait": 20}).json()

    poller = threading.Thread(target=long_poll)
    poller.start()
    with travel(AFTER):
        assert approval_sweep_undeliverable() == 1  # this test's own connection, not the server's
    poller.join(timeout=25)

    assert answered["approval"]["status"] == "expired"
    assert answered["approval"]["decision"]["undeliverable"] is True
    assert answered["approval"]["decision"]["reason"] == UNDELIVERABLE_REASON


def test_the_cli_says_it_was_undeliverable(acme, bob):
    from io import StringIO

    from django.core.management import call_command

    approval = register(world(acme))
    deliveries_send_due()
    with travel(AFTER):
        approval_sweep_undeliverable()
    out = StringIO()

    call_command("hitl", "approve", approval.public_id, "--as", "bob@acme.test", stdout=out)

    assert "was Undeliverable — nobody could be reached; counted as rejected; nothing changed." in out.getvalue()
