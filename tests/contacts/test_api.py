"""The draft's contacts over the API: `${HITL_…}` references only, never a literal address or URL."""

import pytest

from contacts.models import PLACEHOLDER_ERROR, Contact

from ..helpers import error_of, make_config

LITERALS = [
    ("email", "oncall@acme.test"),
    ("slack", "https://hooks.slack.com/services/T000/B000/XXXX"),
    ("webhook", "https://example.test/hitl-hook"),
]


@pytest.mark.parametrize("channel, literal", LITERALS)
def test_it_refuses_a_literal_address_or_url_as_channel_ref(alice_api, acme, channel, literal):
    config = make_config(acme)
    response = alice_api.post(
        f"/api/v1/configs/{config.public_id}/contacts",
        json={"name": "Leads", "channel": channel, "channel_ref": literal},
    )
    assert response.status_code == 400
    assert error_of(response)["fields"]["channel_ref"] == PLACEHOLDER_ERROR
    assert not Contact.objects.exists()


def test_it_adds_lists_edits_and_deletes_contacts(alice_api, acme):
    config = make_config(acme)
    base = f"/api/v1/configs/{config.public_id}/contacts"
    created = alice_api.post(
        base, json={"name": "Leads", "channel": "slack", "channel_ref": "${HITL_ACME_LEADS_SLACK}"}
    )
    assert created.status_code == 201, created.text
    contact = created.json()
    assert contact["id"].startswith("con_")
    assert contact == {
        "id": contact["id"],
        "name": "Leads",
        "channel": "slack",
        "channel_ref": "${HITL_ACME_LEADS_SLACK}",
        "secret_ref": "",
    }
    assert alice_api.post(base, json={"name": "Nobody", "channel": "none"}).status_code == 201

    assert [c["name"] for c in alice_api.get(base).json()["results"]] == ["Leads", "Nobody"]
    edited = alice_api.patch(
        f"{base}/{contact['id']}", json={"channel": "email", "channel_ref": "${HITL_ACME_LEADS_EMAIL}"}
    )
    assert edited.status_code == 200
    assert edited.json()["channel"] == "email"
    refused = alice_api.patch(f"{base}/{contact['id']}", json={"channel_ref": "leads@acme.test"})
    assert refused.status_code == 400
    assert Contact.objects.get(public_id=contact["id"]).channel_ref == "${HITL_ACME_LEADS_EMAIL}"

    assert alice_api.delete(f"{base}/{contact['id']}").status_code == 204
    assert alice_api.get(f"{base}/{contact['id']}").status_code == 404


@pytest.mark.parametrize(
    "body, field",
    [
        ({"channel": "email"}, "name"),
        ({"name": "A", "channel": "pager"}, "channel"),
        ({"name": "A", "channel": "email"}, "channel_ref"),
        ({"name": "A", "channel": "email", "channel_ref": "${lower_case}"}, "channel_ref"),
        ({"name": "x" * 201, "channel": "none"}, "name"),
        ({"name": "A", "channel": "email", "channel_ref": "${SECRET_KEY}"}, "channel_ref"),
        ({"name": "A", "channel": "webhook", "channel_ref": "${HITL_ACME_HOOK}"}, "secret_ref"),
        (
            {"name": "A", "channel": "webhook", "channel_ref": "${HITL_ACME_HOOK}", "secret_ref": "whsec_abc"},
            "secret_ref",
        ),
        (
            {"name": "A", "channel": "webhook", "channel_ref": "${HITL_ACME_HOOK}", "secret_ref": "${DATABASE_URL}"},
            "secret_ref",
        ),
        ({"name": "A", "channel": "email", "channel_ref": 42}, "channel_ref"),
    ],
)
def test_it_refuses_bad_contact_fields_naming_the_field(alice_api, acme, body, field):
    config = make_config(acme)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/contacts", json=body)
    assert response.status_code == 400, response.text
    assert field in error_of(response)["fields"]
    assert not Contact.objects.exists()
