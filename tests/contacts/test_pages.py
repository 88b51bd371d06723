"""The Contacts tab: the placeholder message next to the field, editing, isolation by config."""

import pytest
from django.test import Client
from django.urls import reverse

from contacts.models import PLACEHOLDER_ERROR, Contact
from contacts.services import contact_create

from ..helpers import make_config


@pytest.fixture
def admin(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


@pytest.mark.parametrize(
    "channel, literal",
    [
        ("email", "oncall@acme.test"),
        ("slack", "https://hooks.slack.com/services/T0/B0/X"),
        ("webhook", "https://x.test"),
    ],
)
def test_it_shows_the_placeholder_message_next_to_the_channel_reference(admin, acme, channel, literal):
    config = make_config(acme)
    url = reverse("contacts:contacts", args=[config.public_id])
    response = admin.post(url, {"name": "Leads", "channel": channel, "channel_ref": literal})
    assert response.status_code == 400
    page = response.content.decode()
    # The API's message, worded for a person: the field's label, not its API name.
    worded = PLACEHOLDER_ERROR.replace("channel_ref must", "Channel reference must", 1)
    assert f'id="id_channel_ref_error" role="alert">{worded}</p>' in page
    assert "channel_ref must" not in page
    assert not Contact.objects.exists()
    fixed = {
        "name": "Leads",
        "channel": channel,
        "channel_ref": "${HITL_ACME_LEADS}",
        "secret_ref": "${HITL_ACME_LEADS_SECRET}",
    }
    assert admin.post(url, fixed).status_code == 302
    assert "${HITL_ACME_LEADS}" in admin.get(url).content.decode().replace("<wbr>", "")


def test_it_edits_a_contact_with_the_message_next_to_the_field(admin, acme):
    config = make_config(acme)
    contact = contact_create(config=config, name="Leads", channel="email", channel_ref="${HITL_ACME_LEADS}")
    url = reverse("contacts:contact_edit", args=[config.public_id, contact.public_id])
    refused = admin.post(url, {"name": "Leads", "channel": "email", "channel_ref": "leads@acme.test"})
    assert PLACEHOLDER_ERROR.replace("channel_ref must", "Channel reference must", 1) in refused.content.decode()
    assert (
        admin.post(url, {"name": "Leads", "channel": "slack", "channel_ref": "${HITL_ACME_LEADS_SLACK}"}).status_code
        == 302
    )
    contact.refresh_from_db()
    assert contact.channel_ref == "${HITL_ACME_LEADS_SLACK}"


def test_it_answers_404_for_another_configs_contact(admin, acme):
    leads = contact_create(config=make_config(acme, "Support"), name="Leads", channel="none")
    other = make_config(acme, "Billing")
    url = reverse("contacts:contact_edit", args=[other.public_id, leads.public_id])
    assert admin.get(url).status_code == 404
    assert admin.post(reverse("contacts:contact_delete", args=[other.public_id, leads.public_id])).status_code == 404
    assert Contact.objects.filter(pk=leads.pk).exists()
