"""GET /api/v1/deliveries and POST …/contacts/{con}/test over real HTTP (API.md, Notifications)."""

from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from contacts.services import contact_create

from ..helpers import error_of, make_config


def test_an_admin_queues_a_test_and_reviewers_read_the_log(
    alice_api, bob_api, engine_api, charlie_api, acme, monkeypatch
):
    config = make_config(acme)
    contact = contact_create(config=config, name="Leads", channel="email", channel_ref="${HITL_ACME_UNSET_LEADS}")
    base = f"/api/v1/configs/{config.public_id}/contacts/{contact.public_id}/test"

    assert bob_api.post(base).status_code == 403  # reviewers do not change contacts
    queued = alice_api.post(base)
    assert queued.status_code == 202, queued.text
    body = queued.json()
    assert body["id"].startswith("dlv_")
    assert {k: body[k] for k in ("approval_id", "contact_id", "event", "channel", "status", "attempts")} == {
        "approval_id": None,
        "contact_id": contact.public_id,
        "event": "test",
        "channel": "email",
        "status": "pending",
        "attempts": 0,
    }

    deliveries_send_due()  # what the cluster runs: the variable is not set
    listed = bob_api.get(f"/api/v1/deliveries?contact={contact.public_id}")
    assert listed.status_code == 200
    [row] = listed.json()["results"]
    assert (row["id"], row["status"], row["last_error"]) == (body["id"], "failed", "HITL_ACME_UNSET_LEADS is not set")
    assert bob_api.get("/api/v1/deliveries?status=sent").json()["results"] == []

    assert engine_api.get("/api/v1/deliveries").status_code == 403
    assert charlie_api.get(f"/api/v1/deliveries?contact={contact.public_id}").json()["results"] == []
    assert charlie_api.post(base).status_code == 404
    refused = bob_api.get("/api/v1/deliveries?status=lost")
    assert refused.status_code == 400 and "status" in error_of(refused)["fields"]
    assert Delivery.objects.count() == 1


def test_the_schema_describes_the_deliveries_endpoints(anonymous_api, acme):
    paths = anonymous_api.get("/api/schema/?format=json").json()["paths"]
    assert "get" in paths["/api/v1/deliveries"]
    test = paths["/api/v1/configs/{cfg}/contacts/{con}/test"]["post"]
    assert "202" in test["responses"]
    rule = anonymous_api.get("/api/schema/?format=json").json()["components"]["schemas"]["Rule"]
    assert {"notify", "escalate_to", "escalate_after_seconds"} <= set(rule["properties"])


def test_the_contacts_tab_sends_a_test_and_lists_recent_deliveries(alice, acme):
    from django.test import Client
    from django.urls import reverse

    config = make_config(acme)
    contact = contact_create(config=config, name="Leads", channel="email", channel_ref="${HITL_ACME_UNSET_LEADS}")
    client = Client()
    client.force_login(alice)
    sent = client.post(reverse("contacts:contact_test", args=[config.public_id, contact.public_id]), follow=True)
    delivery = Delivery.objects.get()
    page = sent.content.decode()
    assert f"Queued a test to Leads ({delivery.public_id})" in page
    assert f'data-delivery="{delivery.public_id}"' in page
    deliveries_send_due()
    assert (
        "HITL_ACME_UNSET_LEADS is not set"
        in client.get(reverse("contacts:contacts", args=[config.public_id])).content.decode()
    )
