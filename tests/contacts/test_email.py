"""Email notifications through Django's SMTP backend to a local SMTP server (aiosmtpd)."""

import re

import pytest

from approvals.review.decide import approval_decide
from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from contacts.services import contact_create
from rules.services import rule_update

from ..helpers import publish, register_gate
from ..loopback import parts

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def by_email(notified, monkeypatch):
    """bob (a reviewer) and an outsider address, each an email contact the rule notifies."""
    config = notified["config"]
    bob = contact_create(config=config, name="Bob", channel="email", channel_ref="${HITL_ACME_BOB_EMAIL}")
    outside = contact_create(config=config, name="Ops list", channel="email", channel_ref="${HITL_ACME_OPS_EMAIL}")
    monkeypatch.setenv("HITL_ACME_BOB_EMAIL", "bob@acme.test")
    monkeypatch.setenv("HITL_ACME_OPS_EMAIL", "ops-list@acme.test")
    rule_update(rule=notified["rule"], notify=[bob.public_id, outside.public_id])
    notified["version"] = publish(config)
    return notified


def test_it_mails_text_and_html_naming_the_act_and_a_one_click_link_only_to_a_reviewer(by_email, mailbox):
    approval = register_gate(by_email)
    deliveries_send_due()
    assert len(mailbox.messages) == 2
    mails = {rcpt[0]: message for rcpt, message in mailbox.messages}
    bob, ops = mails["bob@acme.test"], mails["ops-list@acme.test"]
    assert bob["Subject"] == "Approve: Delete customer T-4821?"
    bob_parts, ops_parts = parts(bob), parts(ops)
    assert set(bob_parts) == {"text/plain", "text/html"}
    assert "customer T-4821" in bob_parts["text/plain"] and "Check before deleting" in bob_parts["text/html"]
    assert re.search(r"/hitl/r/[^\s\"]+", bob_parts["text/plain"])
    assert "/hitl/r/" not in ops_parts["text/plain"]  # not a reviewer: the request's page, behind login
    assert f"/hitl/approvals/{approval.public_id}/" in ops_parts["text/plain"]
    statuses = set(Delivery.objects.filter(approval=approval, event="requested").values_list("status", flat=True))
    assert statuses == {"sent"}

    approval_decide(approval=approval, user=by_email["bob"], decision="approve")
    deliveries_send_due()
    subjects = sorted(message["Subject"] for _, message in mailbox.messages[2:])
    assert subjects == ["Approved: Delete customer T-4821"] * 2


def test_a_batchs_emails_to_one_reviewer_each_carry_a_link_to_their_own_request(by_email, mailbox, monkeypatch):
    from approvals.review.links import link_open

    monkeypatch.setenv("HITL_ACME_BOB_EMAIL", "Bob@Acme.test")  # the address as written, matched whatever its case
    approvals = [register_gate(by_email, run_id=f"run_{i}") for i in range(4)]
    deliveries_send_due()  # one batch: bob's reviewer membership is read once for the four
    to_bob = [message for rcpt, message in mailbox.messages if rcpt == ["Bob@Acme.test"]]
    assert len(to_bob) == 4
    opened = []
    for message in to_bob:
        [token] = re.findall(r"/hitl/r/([^\s\"/]+)", parts(message)["text/plain"])
        link = link_open(token)
        assert link.user == by_email["bob"] and link.delivery.recipient["channel_ref"] == "${HITL_ACME_BOB_EMAIL}"
        opened.append(link.approval.public_id)
    assert sorted(opened) == sorted(a.public_id for a in approvals)
    to_ops = [message for rcpt, message in mailbox.messages if rcpt == ["ops-list@acme.test"]]
    assert len(to_ops) == 4 and not any("/hitl/r/" in parts(message)["text/plain"] for message in to_ops)


def test_an_unreachable_mail_server_is_retried_later_and_the_error_names_no_address(by_email, settings):
    from tests.loopback import free_port

    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", free_port()  # nothing listens there
    approval = register_gate(by_email)
    deliveries_send_due()
    delivery = Delivery.objects.filter(approval=approval, event="requested").first()
    assert (delivery.status, delivery.last_error) == ("pending", "could not reach the mail server")
    assert "acme.test" not in delivery.last_error


def test_more_than_five_requests_a_minute_for_one_contact_go_out_as_one_digest(by_email, mailbox, settings):
    import time
    from datetime import timedelta

    from django.utils import timezone

    if timezone.now().second >= 50:  # the eight must fall in one minute
        time.sleep(61 - timezone.now().second)
    approvals = [register_gate(by_email, run_id=f"run_{i}") for i in range(8)]
    deliveries_send_due()
    to_bob = [m for rcpt, m in mailbox.messages if rcpt == ["bob@acme.test"]]
    assert len(to_bob) == 5  # the first five one by one; the rest wait for the end of the minute
    held = Delivery.objects.filter(contact_public_id__in=by_email["rule"].notify, digest=True, status="pending")
    assert held.count() == 6  # three per contact
    # The minute ends (moved along in the database rather than waited for).
    held.update(next_attempt_at=timezone.now() - timedelta(seconds=1))
    Delivery.objects.filter(digest=True).update(created_at=timezone.now() - timedelta(minutes=2))
    Delivery.objects.filter(event="requested", digest=False).update(created_at=timezone.now() - timedelta(minutes=2))
    deliveries_send_due()
    to_bob = [m for rcpt, m in mailbox.messages if rcpt == ["bob@acme.test"]]
    assert len(to_bob) == 6
    assert to_bob[-1]["Subject"] == "3 more requests wait for approval"
    for approval in approvals[5:]:
        assert approval.public_id in parts(to_bob[-1])["text/plain"]
    assert not Delivery.objects.filter(event="requested", status="pending").exists()


def test_a_question_is_mailed_to_questions_notify_with_its_questions_and_a_link_to_its_page(by_email, mailbox):
    from approvals.engine.register import Sent, register
    from rules.services import config_update

    from ..approvals.question_support import QUESTIONS

    config = by_email["config"]
    bob_contact = config.contacts.get(name="Bob")
    config_update(config=config, questions_notify=[bob_contact.public_id])
    version = publish(config)
    approval = register(
        workspace=by_email["workspace"],
        engine_key=by_email["engine_key"],
        sent=Sent(
            kind="question",
            config_id=config.public_id,
            config_version=version.number,
            run_id="run_q",
            thread_id="",
            caller="migration-bot",
            title="Before the migration",
            questions=QUESTIONS,
        ),
    ).approval

    deliveries_send_due()

    [(rcpt, mail)] = mailbox.messages
    assert rcpt == ["bob@acme.test"] and mail["Subject"] == "Answer: Before the migration?"
    text = parts(mail)["text/plain"]
    assert "1. Which environment should the migration run on? (Staging / Production)" in text
    assert f"/hitl/approvals/{approval.public_id}/" in text
    assert "/hitl/r/" not in text  # answered on its page, not by an approve / reject link
