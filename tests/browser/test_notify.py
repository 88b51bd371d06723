"""From the inbox to a decision in Chromium: an email's one-click link opens a confirm page; its button decides."""

import re

from playwright.sync_api import expect

from approvals.models import ApprovalRequest
from contacts.sending import deliveries_send_due
from contacts.services import contact_create
from tests.helpers import make_config, make_rule, make_token, publish
from tests.loopback import parts


def test_a_reviewer_follows_the_emails_link_to_the_confirm_page_and_approves(
    page,
    live_server,
    acme,
    bob,
    mailbox,
    settings,
    monkeypatch,
):
    from approvals.engine.register import Sent, register
    from workspaces.models import ApiToken

    settings.HITL_BASE_URL = live_server.url
    monkeypatch.setenv("HITL_ACME_BOB_EMAIL", "bob@acme.test")
    config = make_config(acme)
    contact = contact_create(config=config, name="Bob", channel="email", channel_ref="${HITL_ACME_BOB_EMAIL}")
    rule = make_rule(config, message="Deletes of customer data need a second pair of eyes.", notify=[contact.public_id])
    version = publish(config)
    make_token(acme, engine="support-engine")
    approval = register(
        workspace=acme,
        engine_key=ApiToken.objects.get(workspace=acme, kind="engine"),
        sent=Sent(
            kind="gate",
            config_id=config.public_id,
            config_version=version.number,
            rule_id=rule.public_id,
            run_id="run_1",
            thread_id="thr_1",
            caller="support-bot",
            target="customer T-4821",
            operation="delete",
        ),
    ).approval
    deliveries_send_due()  # what the cluster runs

    [(recipients, message)] = mailbox.messages
    assert recipients == ["bob@acme.test"]
    link = re.search(r"http://\S+/hitl/r/\S+", parts(message)["text/plain"]).group(0)

    page.goto(link)  # not signed in: the link alone names the reviewer
    expect(page.locator("#confirm h1")).to_have_text("Delete customer T-4821?")
    expect(page.locator("#confirm")).to_contain_text("You are deciding as bob@acme.test")
    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"  # opening decided nothing

    page.fill("#link-reason", "Duplicate record, checked")
    page.click("button[value=approve]")
    expect(page.locator("#link-done h1")).to_have_text("Approved: Delete customer T-4821")
    decided = ApprovalRequest.objects.get(pk=approval.pk)
    assert (decided.status, decided.decided_by_email, decided.reason) == (
        "approved",
        "bob@acme.test",
        "Duplicate record, checked",
    )

    page.goto(link)  # used: it says so
    expect(page.locator("#link-refused")).to_contain_text("already used")
