"""Push endpoints reach public addresses only (contacts/outbound.py): refused when subscribed, and when sent.

Each test takes away the allowance the loopback fakes run with (tests/loopback.py), as a host that
allows nothing internal."""

import json

import pytest
from django.test import Client

from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from push.models import PushSubscription

from ..helpers import register_gate
from .conftest import FakeBrowser, subscribe

URL = "/api/v1/push/subscriptions"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("endpoint", "kind"),
    [
        ("https://169.254.169.254/latest/meta-data/push", "link-local"),
        ("https://10.0.0.5/push/abc", "private"),
        ("https://[::1]/push/abc", "loopback"),
        ("https://127.0.0.1:5432/push/abc", "loopback"),
        ("https://localhost/push/abc", "loopback"),  # a name resolving to loopback
        ("https://[::ffff:127.0.0.1]/push/abc", "loopback"),  # IPv4-mapped IPv6
        ("https://[fd00::5]/push/abc", "private"),
        ("https://0.0.0.0/push/abc", "unspecified"),
        ("https://224.0.0.251/push/abc", "multicast"),
        ("https://240.0.0.1/push/abc", "private"),  # reserved for future use: Python counts it private
    ],
)
def test_an_endpoint_on_an_internal_address_is_refused_when_subscribed(
    bob, vapid_env, push_service, settings, endpoint, kind
):
    settings.HITL_OUTBOUND_ALLOW = []
    client = Client(enforce_csrf_checks=True)
    client.force_login(bob)
    client.get("/hitl/account/")
    keys = FakeBrowser(push_service, "phone").subscription["keys"]  # a browser's keys, the endpoint an attacker's
    response = client.post(
        URL,
        json.dumps({"endpoint": endpoint, "keys": keys}),
        content_type="application/json",
        headers={"X-CSRFToken": client.cookies["csrftoken"].value},
    )
    assert response.status_code == 400, response.content
    message = response.json()["error"]["fields"]["endpoint"]
    assert message.startswith(f"endpoint reaches a {kind} address;")
    assert "HITL_OUTBOUND_ALLOW" in message
    assert not PushSubscription.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_subscription_whose_address_is_no_longer_allowed_is_not_sent_to(pushed, push_service, settings):
    """Subscribed while the host allowed loopback; the host takes it back: the send connects nowhere."""
    phone = FakeBrowser(push_service, "phone")
    subscribe(pushed["bob"], phone)
    settings.HITL_OUTBOUND_ALLOW = []
    approval = register_gate(pushed)
    deliveries_send_due()
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert (delivery.status, delivery.attempts) == ("failed", 1)  # not retried: sending again cannot help
    assert delivery.last_error.startswith("the subscription's endpoint reaches a loopback address;")
    assert "127.0.0.1" not in delivery.last_error
    assert push_service.received == []
