"""/metrics for Prometheus (behind HITL_METRICS_TOKEN) and /healthz for load balancers."""

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from approvals.engine.waiting import slots
from approvals.expiry.expire import approval_sweep_overdue
from approvals.review.decide import approval_decide
from tests.factories import make_approval
from tests.helpers import make_config, travel

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def metrics_token(monkeypatch):
    monkeypatch.setenv("HITL_METRICS_TOKEN", "s3cret-scrape-token")
    return "s3cret-scrape-token"


def scrape(client, token: str) -> dict:
    response = client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(response.content.decode()):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def test_metrics_answer_401_without_the_scrape_token(client, metrics_token, db):
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_token}").status_code == 200


def test_metrics_are_off_when_no_scrape_token_is_configured(client, monkeypatch, db):
    monkeypatch.delenv("HITL_METRICS_TOKEN", raising=False)
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer ")
    assert response.status_code == 401
    assert b"HITL_METRICS_TOKEN" in response.content


def test_metrics_count_pending_decisions_and_time_to_decision(client, acme, bob, metrics_token):
    support = make_config(acme, "Support agent")
    for _ in range(3):
        make_approval(support)
    quick = make_approval(support)
    with travel(timedelta(seconds=3)):
        approval_decide(approval=quick, user=bob, decision="approve")
    slow = make_approval(support)
    with travel(timedelta(minutes=10)):
        approval_decide(approval=slow, user=bob, decision="reject", reason="no")
    make_approval(support, ttl=timedelta(minutes=1))
    with travel(timedelta(minutes=2)):
        approval_sweep_overdue()

    samples = scrape(client, metrics_token)

    assert samples[("hitl_approvals_pending", ())] == 3
    assert samples[("hitl_approval_decisions_total", (("outcome", "approved"),))] == 1
    assert samples[("hitl_approval_decisions_total", (("outcome", "rejected"),))] == 1
    assert samples[("hitl_approval_decisions_total", (("outcome", "expired"),))] == 1
    assert samples[("hitl_time_to_decision_seconds_bucket", (("le", "1.0"),))] == 0
    assert samples[("hitl_time_to_decision_seconds_bucket", (("le", "5.0"),))] == 1
    assert samples[("hitl_time_to_decision_seconds_bucket", (("le", "900.0"),))] == 2
    assert samples[("hitl_time_to_decision_seconds_count", ())] == 2
    assert 600 < samples[("hitl_time_to_decision_seconds_sum", ())] < 610
    assert samples[("hitl_waiting_engines", ())] == 0


def test_metrics_count_deliveries_by_channel_and_status(client, acme, metrics_token):
    from contacts.models import Delivery

    def delivery(channel: str, status: str) -> None:
        now = timezone.now()
        recipient = {"id": "con_x", "name": "On call", "channel": channel, "channel_ref": "${HITL_ONCALL}"}
        Delivery.objects.create(
            workspace=acme,
            contact_public_id="con_x",
            recipient=recipient,
            event="test",
            channel=channel,
            status=status,
            next_attempt_at=now,
            created_at=now,
        )

    for _ in range(3):
        delivery("email", "sent")
    delivery("email", "failed")
    delivery("webhook", "pending")

    samples = scrape(client, metrics_token)

    assert samples[("hitl_deliveries_total", (("channel", "email"), ("status", "sent")))] == 3
    assert samples[("hitl_deliveries_total", (("channel", "email"), ("status", "failed")))] == 1
    assert samples[("hitl_deliveries_total", (("channel", "webhook"), ("status", "pending")))] == 1
    assert not any(
        name == "hitl_deliveries_total" and dict(labels).get("channel") == "slack" for name, labels in samples
    )


def test_waiting_engines_counts_long_polls_held_now(client, db, metrics_token):
    slots.take(None)
    slots.take(None)
    try:
        assert scrape(client, metrics_token)[("hitl_waiting_engines", ())] == 2
    finally:
        slots.give_back(None)
        slots.give_back(None)
    assert scrape(client, metrics_token)[("hitl_waiting_engines", ())] == 0


def test_healthz_says_ok_when_the_database_answers(client, db):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_healthz_answers_503_when_the_database_is_down():
    # A real portal process whose database does not answer (nothing listens on that port).
    script = (
        "import django; django.setup()\n"
        "from django.test import Client\n"
        "r = Client(HTTP_HOST='127.0.0.1').get('/healthz')\n"
        "print(r.status_code, r.content.decode())\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "hitl_portal.settings",
        "DATABASE_URL": "postgres://postgres@127.0.0.1:9/nowhere",
        "LOG_LEVEL": "CRITICAL",
    }
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.stdout.startswith("503 "), result.stdout + result.stderr
    assert '"status": "unavailable"' in result.stdout


def test_metrics_count_sealed_audit_records_an_anchor_outside_the_database(client, acme, globex, metrics_token):
    from audit.selectors import audit_head
    from audit.services import audit_append, audit_seal

    for workspace in (acme, globex):
        audit_append(workspace_id=workspace.pk, actor="system", action="test.appended", object="x")
        audit_seal(workspace_id=workspace.pk)
    expected = sum(audit_head(workspace_id=w.pk)[0] for w in (acme, globex))
    assert expected >= 2
    assert scrape(client, metrics_token)[("hitl_audit_sealed_records_total", ())] == expected
