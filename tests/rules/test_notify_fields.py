"""Rules name the contacts they notify and escalate to; versions freeze them (API.md, rule fields)."""

import pytest
from django.test import Client
from django.urls import reverse

from contacts.models import Contact
from contacts.services import contact_create
from rules.models import Rule

from ..helpers import error_of, make_config, make_rule, publish


@pytest.fixture
def admin(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def _contacts(config):
    leads = contact_create(config=config, name="Support leads", channel="email", channel_ref="${HITL_ACME_LEADS_EMAIL}")
    finance = contact_create(
        config=config,
        name="Finance hook",
        channel="webhook",
        channel_ref="${HITL_ACME_FINANCE_HOOK}",
        secret_ref="${HITL_ACME_FINANCE_HOOK_SECRET}",
    )
    return leads, finance


def test_it_sets_notify_and_escalation_on_a_rule_and_freezes_them_in_the_version(alice_api, acme):
    config = make_config(acme)
    leads, finance = _contacts(config)
    base = f"/api/v1/configs/{config.public_id}/rules"
    created = alice_api.post(
        base,
        json={
            "notify": [leads.public_id],
            "escalate_to": [finance.public_id],
            "escalate_after_seconds": 600,
        },
    )
    assert created.status_code == 201, created.text
    rule = created.json()
    assert rule["notify"] == [leads.public_id]
    assert rule["escalate_to"] == [finance.public_id]
    assert rule["escalate_after_seconds"] == 600

    published = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", json={})
    frozen = published.json()
    assert frozen["rules"][0]["notify"] == [leads.public_id]
    assert frozen["rules"][0]["escalate_after_seconds"] == 600
    assert {c["id"]: c["secret_ref"] for c in frozen["contacts"]}[
        finance.public_id
    ] == "${HITL_ACME_FINANCE_HOOK_SECRET}"

    # The draft moves on; the version does not.
    alice_api.patch(f"{base}/{rule['id']}", json={"notify": [], "escalate_to": [], "escalate_after_seconds": None})
    assert alice_api.get(f"/api/v1/configs/{config.public_id}/versions/1").json()["rules"][0]["notify"] == [
        leads.public_id
    ]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"notify": ["con_nobody"]}, "notify"),
        ({"escalate_to": ["con_nobody"], "escalate_after_seconds": 120}, "escalate_to"),
        ({"notify": "con_x"}, "notify"),
        ({"escalate_after_seconds": 59}, "escalate_after_seconds"),
        ({"escalate_after_seconds": 86_401}, "escalate_after_seconds"),
    ],
)
def test_it_refuses_a_contact_that_is_not_in_this_config_naming_the_field(alice_api, acme, body, field):
    config = make_config(acme)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", json=body)
    assert response.status_code == 400, response.text
    assert field in error_of(response)["fields"]
    assert not Rule.objects.exists()


def test_it_refuses_a_contact_of_another_config(alice_api, acme):
    config, other = make_config(acme), make_config(acme, name="Billing agent")
    _, foreign = _contacts(other)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", json={"notify": [foreign.public_id]})
    assert response.status_code == 400
    assert f"{foreign.public_id} is not a contact of this config" in error_of(response)["fields"]["notify"]


def test_it_refuses_to_delete_a_contact_a_draft_rule_names_with_409_naming_the_rules(alice_api, acme):
    config = make_config(acme)
    leads, finance = _contacts(config)
    rule = make_rule(config, notify=[leads.public_id])
    response = alice_api.delete(f"/api/v1/configs/{config.public_id}/contacts/{leads.public_id}")
    assert response.status_code == 409
    error = error_of(response)
    assert error["code"] == "conflict"
    assert rule.public_id in error["message"]
    assert Contact.objects.filter(pk=leads.pk).exists()
    assert alice_api.delete(f"/api/v1/configs/{config.public_id}/contacts/{finance.public_id}").status_code == 204


def test_the_contacts_tab_says_which_rules_use_a_contact_it_cannot_delete(admin, acme):
    config = make_config(acme)
    leads, _ = _contacts(config)
    rule = make_rule(config, escalate_to=[leads.public_id], escalate_after_seconds=300)
    url = reverse("contacts:contact_delete", args=[config.public_id, leads.public_id])
    page = admin.post(url, follow=True).content.decode()
    assert f"is named by draft rule {rule.public_id}" in page
    assert Contact.objects.filter(pk=leads.pk).exists()


def test_the_rule_editor_picks_contacts_and_the_version_page_and_diff_show_them(admin, acme):
    config = make_config(acme)
    leads, finance = _contacts(config)
    rule = make_rule(config)
    publish(config)
    url = reverse("rules:rule_edit", args=[config.public_id, rule.public_id])
    form = {
        "kind": "delete",
        "which": "any",
        "match": "",
        "point": "entry",
        "enabled": "on",
        "message": "",
        "order": "10",
        "notify": [leads.public_id],
        "escalate_to": [finance.public_id],
        "escalate_after_seconds": "",
    }
    refused = admin.post(url, form)
    assert refused.status_code == 400
    assert "escalate_to needs escalate_after_seconds" in refused.content.decode()
    assert admin.post(url, {**form, "escalate_after_seconds": "300"}).status_code == 302
    rule.refresh_from_db()
    assert rule.notify == [leads.public_id] and rule.escalate_after_seconds == 300
    publish(config)

    summary = "notifies Support leads; escalates to Finance hook after 300 s"
    assert summary in admin.get(reverse("rules:version", args=[config.public_id, 2])).content.decode()
    assert summary in admin.get(reverse("rules:rules", args=[config.public_id])).content.decode()


@pytest.mark.parametrize("field", ["notify", "escalate_to"])
def test_a_whitespace_id_is_named_as_no_contact_of_this_config_not_as_blank(alice_api, acme, field):
    """Ids are exact: "\r" was trimmed to "" and refused as blank under `notify.0`, which the schema allowed."""
    config = make_config(acme)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", json={field: ["\r"]})
    assert response.status_code == 400, response.text
    assert "is not a contact of this config" in error_of(response)["fields"][field]
    assert not Rule.objects.exists()
