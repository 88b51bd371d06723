"""Webhook notifications sent by the django-q2 cluster to a receiver on loopback (API.md, Notifications)."""

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from approvals.review.decide import approval_decide
from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from tests.helpers import register_gate

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_it_sends_a_signed_cloudevent_when_a_request_is_registered_and_when_it_is_decided(notified, receiver, cluster):
    approval = register_gate(notified)
    [requested] = receiver.wait_for(1, "requested")
    delivery = Delivery.objects.get(approval=approval, event="requested")
    headers = receiver.received[0][0]
    assert headers["webhook-id"] == delivery.public_id == requested["id"]
    assert requested["specversion"] == "1.0"
    assert requested["source"] == settings.HITL_BASE_URL
    assert requested["subject"] == approval.public_id
    assert requested["datacontenttype"] == "application/json"
    assert requested["data"]["approval"]["id"] == approval.public_id
    assert requested["data"]["approval"]["status"] == "pending"
    assert requested["data"]["review_url"].endswith(f"/hitl/approvals/{approval.public_id}/")
    assert receiver.bad_signatures == 0

    approval_decide(approval=approval, user=notified["bob"], decision="reject", reason="Not this customer")
    [decided] = receiver.wait_for(1, "decided")
    assert decided["data"]["approval"]["status"] == "rejected"
    assert decided["data"]["approval"]["decision"]["decided_by"] == "bob@acme.test"
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 1, "")
    # The reminder was scheduled when the request was first sent; the decision dropped it: it is never sent.
    assert not Delivery.objects.filter(approval=approval, event="reminder").exists()


def test_it_retries_a_503_with_the_same_id_and_fails_a_404_at_once(notified, receiver, hook_env, settings):
    settings.HITL_DELIVERY_RETRY_BASE_SECONDS = 0  # due again at once: the backoff itself is tested below
    answers = iter([503, 429, 200])
    receiver.answer = lambda event: next(answers, 200) if event["data"]["approval"]["run_id"] == "run_retry" else 404
    first = register_gate(notified, run_id="run_retry")
    deliveries_send_due()  # what the cluster's task runs
    assert len(receiver.events("requested")) == 3
    delivery = Delivery.objects.get(approval=first, event="requested")
    assert {event["id"] for event in receiver.events("requested")} == {delivery.public_id}
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 3, "")

    second = register_gate(notified, run_id="run_refused")
    deliveries_send_due()
    refused = Delivery.objects.get(approval=second, event="requested")
    assert (refused.status, refused.attempts, refused.last_error) == ("failed", 1, "HTTP 404 from the endpoint")


def test_a_failing_endpoint_is_tried_at_least_five_times_over_at_least_ten_minutes(notified, hook_env):
    from contacts.sending import retry_delay

    assert settings.HITL_DELIVERY_MAX_ATTEMPTS >= 5
    # Four waits separate five attempts; even the shortest jitter keeps them over ten minutes.
    shortest = sum(min(retry_delay(attempt).total_seconds() for _ in range(200)) for attempt in range(1, 5))
    assert shortest >= 600


def test_a_server_that_never_answers_is_retried_with_a_timeout_message(notified, hook_env, monkeypatch, settings):
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # accepts the connection, never answers
    monkeypatch.setenv("HITL_ACME_TEST_HOOK", f"http://127.0.0.1:{silent.getsockname()[1]}/hook")
    settings.HITL_WEBHOOK_TIMEOUT_SECONDS = 1
    approval = register_gate(notified)
    deliveries_send_due()
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert (delivery.status, delivery.attempts) == ("pending", 1)
    assert delivery.last_error == "the endpoint did not answer within 1 s"
    assert delivery.next_attempt_at > timezone.now() + timedelta(seconds=40)
    silent.close()


def test_an_unset_variable_fails_naming_the_variable_never_the_address(notified, receiver, monkeypatch):
    monkeypatch.setenv("HITL_ACME_TEST_HOOK_SECRET", SECRET_PLACEHOLDER)
    monkeypatch.delenv("HITL_ACME_TEST_HOOK", raising=False)
    approval = register_gate(notified)
    deliveries_send_due()
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert (delivery.status, delivery.last_error) == ("failed", "HITL_ACME_TEST_HOOK is not set")
    assert receiver.events() == []


SECRET_PLACEHOLDER = "whsec_" + "QUJD"


def test_a_decision_from_the_cli_wakes_the_sender_at_once(notified, receiver, cluster, hook_env):
    """The CLI is a process that ends right after its commit: what it owes the sender is not lost with it."""
    import subprocess
    import sys
    import time

    from tests.loopback import ROOT, subprocess_env

    approval = register_gate(notified)
    receiver.wait_for(1, "requested")  # the cluster is up and sending

    result = subprocess.run(
        [sys.executable, "manage.py", "hitl", "approve", approval.public_id, "--as", "bob@acme.test"],
        cwd=ROOT,
        env=subprocess_env(**hook_env, LOG_LEVEL="INFO"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    exited = time.monotonic()
    [decided] = receiver.wait_for(1, "decided", timeout=5)  # not the minute schedule's next round

    assert decided["subject"] == approval.public_id
    assert time.monotonic() - exited < 5
    # The CLI itself woke the cluster before it ended (django-q2 logs each task it stores).
    assert "Enqueued [hitl]" in result.stderr, result.stderr
    assert "I/O operation on closed file" not in result.stderr
    assert "Could not enqueue" not in result.stderr
