"""Email cannot edit a call's arguments: where the rule allows edits, the mail offers "Edit in the portal"."""

import pytest

from contacts.sending import deliveries_send_due
from contacts.services import contact_create
from rules.services import config_update, rule_update

from ..helpers import publish, register_gate
from ..loopback import parts

pytestmark = [pytest.mark.django_db(transaction=True)]


def test_a_mail_about_an_editable_request_links_to_the_cards_editor(notified, mailbox, monkeypatch):
    config = notified["config"]
    bob = contact_create(config=config, name="Bob", channel="email", channel_ref="${HITL_ACME_BOB_EMAIL}")
    monkeypatch.setenv("HITL_ACME_BOB_EMAIL", "bob@acme.test")
    config_update(config=config, pass_information_level="full")
    rule_update(rule=notified["rule"], notify=[bob.public_id], allow_edit=True)
    notified["version"] = publish(config)

    approval = register_gate(notified, arguments={"customer_id": "T-4821"})
    deliveries_send_due()
    [(_, message)] = mailbox.messages
    text, html = parts(message)["text/plain"], parts(message)["text/html"]
    edit_url = f"/hitl/approvals/{approval.public_id}/#edit-{approval.public_id}"
    assert "Edit in the portal" in text and edit_url in text
    assert 'href="http://' in html and edit_url in html and ">Edit in the portal</a>" in html


def test_a_mail_about_a_request_without_edits_has_no_edit_link(notified, mailbox, monkeypatch):
    config = notified["config"]
    bob = contact_create(config=config, name="Bob", channel="email", channel_ref="${HITL_ACME_BOB_EMAIL}")
    monkeypatch.setenv("HITL_ACME_BOB_EMAIL", "bob@acme.test")
    rule_update(rule=notified["rule"], notify=[bob.public_id])
    notified["version"] = publish(config)
    register_gate(notified)
    deliveries_send_due()
    [(_, message)] = mailbox.messages
    assert "Edit in the portal" not in parts(message)["text/plain"]
