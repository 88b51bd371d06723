"""`channel: push`: each reviewer's browsers get the request, encrypted to their keys (API.md, Reach)."""

import pytest
from cryptography.exceptions import InvalidTag
from django.contrib.auth import get_user_model
from http_ece import ECEException

from approvals.presenters.channels import act_subject, review_url
from approvals.review.decide import approval_decide
from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from push.models import PushSubscription
from tests.loopback import Cluster, vapid_signer_of, wait_for

from ..helpers import make_member, make_workspace, register_gate
from .conftest import FakeBrowser, subscribe

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_every_reviewers_browser_gets_the_request_and_a_tap_opens_its_page(pushed, push_service, vapid_env):
    phone, laptop, alices = (FakeBrowser(push_service, name) for name in ("bob-phone", "bob-laptop", "alice"))
    subscribe(pushed["bob"], phone)
    subscribe(pushed["bob"], laptop)
    subscribe(pushed["alice"], alices)
    approval = register_gate(pushed)
    cluster = Cluster(**vapid_env).start()
    try:
        for name in ("bob-phone", "bob-laptop", "alice"):
            push_service.wait_for(name)
        sent = Delivery.objects.filter(approval=approval, event="requested", status="sent")
        wait_for(sent.exists, timeout=15, what="the delivery recorded as sent")
    finally:
        cluster.stop()

    [message] = push_service.messages_to("bob-phone")
    shown = phone.read(message)
    assert shown["title"] == act_subject(approval, "requested") == "Approve: Delete customer T-4821?"
    assert shown["url"] == review_url(approval)
    assert shown["url"].endswith(f"/hitl/approvals/{approval.public_id}/")
    assert shown["tag"] == approval.public_id
    assert shown["body"].startswith("support-bot asks · run run_1 · expires ")
    # What a locked screen shows is what is asked, never the arguments (nor the key among them).
    assert "sk-live" not in message.body.decode("latin-1") and "sk-live" not in str(shown)
    assert "customer_id" not in str(shown)
    # Each browser reads only its own copy: the same message, encrypted to each one's keys.
    assert laptop.read(push_service.messages_to("bob-laptop")[0]) == shown
    assert alices.read(push_service.messages_to("alice")[0]) == shown
    with pytest.raises((InvalidTag, ECEException)):
        laptop.read(message)
    # Signed with the portal's VAPID key (RFC 8292), for a push service to know who sends.
    assert vapid_signer_of(message) == vapid_env["HITL_VAPID_PUBLIC_KEY"]
    assert message.headers["ttl"] == "43200" and message.headers["urgency"] == "high"
    assert message.headers["topic"] == approval.public_id
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert (delivery.channel, delivery.status, delivery.last_error) == ("push", "sent", "")


def test_the_decision_is_pushed_too_replacing_the_request_on_the_device(pushed, push_service):
    phone = FakeBrowser(push_service, "phone")
    subscribe(pushed["bob"], phone)
    approval = register_gate(pushed)
    deliveries_send_due()
    approval_decide(approval=approval, user=pushed["alice"], decision="reject", reason="Not this customer")
    deliveries_send_due()
    asked, decided = (phone.read(m) for m in push_service.messages_to("phone"))
    assert decided["title"] == "Rejected: Delete customer T-4821"
    assert decided["body"].startswith("Rejected by alice@acme.test at ")
    assert decided["tag"] == asked["tag"] == approval.public_id


def test_a_subscription_the_push_service_says_is_gone_is_dropped_and_the_others_still_get_it(pushed, push_service):
    gone, expired, alive = (FakeBrowser(push_service, name) for name in ("gone", "expired", "alive"))
    push_service.answers = {"gone": [410], "expired": [404]}
    for browser in (gone, expired, alive):
        subscribe(pushed["bob"], browser)
    approval = register_gate(pushed)
    deliveries_send_due()

    assert [s.endpoint for s in PushSubscription.objects.all()] == [alive.subscription["endpoint"]]
    assert alive.read(push_service.messages_to("alive")[0])["url"] == review_url(approval)
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert delivery.status == "sent"


def test_when_every_browser_is_gone_the_delivery_fails_saying_so(pushed, push_service):
    push_service.answers = {"old": [410]}
    subscribe(pushed["bob"], FakeBrowser(push_service, "old"))
    approval = register_gate(pushed)
    deliveries_send_due()
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert delivery.status == "failed"
    assert delivery.last_error == (
        "every subscribed browser was gone (HTTP 410 from the push service: the subscription is gone); "
        "the subscriptions were dropped"
    )
    assert not PushSubscription.objects.exists()
    assert "127.0.0.1" not in delivery.last_error  # never the endpoint


def test_a_push_service_error_is_retried_like_any_delivery_and_the_subscription_kept(pushed, push_service, settings):
    settings.HITL_DELIVERY_RETRY_BASE_SECONDS = 0  # due again at once
    phone = FakeBrowser(push_service, "phone")
    push_service.answers = {"phone": [503, 429, 201]}
    subscribe(pushed["bob"], phone)
    approval = register_gate(pushed)
    deliveries_send_due()
    messages = push_service.messages_to("phone")
    assert len(messages) == 3
    assert len({phone.read(m)["tag"] for m in messages}) == 1  # the same notification, replaced not doubled
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 3, "")
    assert PushSubscription.objects.count() == 1


def test_a_failed_attempt_names_the_status_and_waits_for_the_backoff(pushed, push_service):
    push_service.answers = {"phone": [500]}
    subscribe(pushed["bob"], FakeBrowser(push_service, "phone"))
    approval = register_gate(pushed)
    deliveries_send_due()
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("pending", 1, "HTTP 500 from the push service")


def test_nobody_subscribed_fails_the_delivery_for_good(pushed, push_service):
    approval = register_gate(pushed)
    deliveries_send_due()
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert (delivery.status, delivery.last_error) == (
        "failed",
        "no reviewer of the workspace has subscribed a browser to push",
    )


def test_only_the_workspaces_current_reviewers_are_notified(pushed, push_service):
    """Another workspace's reviewer, someone removed from the workspace, someone deactivated: not told."""
    from workspaces.models import Membership

    globex = make_workspace("globex")
    charlie = make_member(globex, "charlie@globex.test", "admin")
    dave = make_member(pushed["workspace"], "dave@acme.test", "reviewer")
    erin = make_member(pushed["workspace"], "erin@acme.test", "reviewer")
    subscribe(charlie, FakeBrowser(push_service, "charlie"), workspace=globex)
    subscribe(dave, FakeBrowser(push_service, "dave"))
    subscribe(erin, FakeBrowser(push_service, "erin"))
    subscribe(pushed["bob"], FakeBrowser(push_service, "bob"))
    Membership.objects.filter(user=dave).delete()
    get_user_model().objects.filter(pk=erin.pk).update(is_active=False)

    register_gate(pushed)
    deliveries_send_due()
    assert {m.path for m in push_service.received} == {"/push/bob"}


def test_a_subscription_dies_with_its_user(pushed, push_service):
    subscribe(pushed["bob"], FakeBrowser(push_service, "bob"))
    pushed["bob"].delete()
    assert not PushSubscription.objects.exists()


def test_without_a_vapid_key_the_delivery_fails_naming_the_variable(pushed, push_service, monkeypatch):
    monkeypatch.delenv("HITL_VAPID_PRIVATE_KEY")
    subscribe(pushed["bob"], FakeBrowser(push_service, "bob"))
    approval = register_gate(pushed)
    deliveries_send_due()
    delivery = Delivery.objects.get(approval=approval, event="requested")
    assert delivery.status == "failed"
    assert delivery.last_error.startswith("HITL_VAPID_PRIVATE_KEY is not set")
    assert push_service.received == []


def test_send_test_reaches_every_subscribed_browser(pushed, push_service):
    from contacts.outbox import delivery_test_create

    phone = FakeBrowser(push_service, "phone")
    subscribe(pushed["bob"], phone)
    delivery = delivery_test_create(contact=pushed["contact"])
    deliveries_send_due()
    shown = phone.read(push_service.messages_to("phone")[0])
    assert shown["title"] == "Test from HITL Portal: Reviewers' phones"
    assert shown["body"] == "Notifications from this contact reach you."
    delivery.refresh_from_db()
    assert delivery.status == "sent"
