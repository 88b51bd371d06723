"""A workspace resolves only the `${HITL_…}` variables its host gave it (contacts/refs.py, API.md Operations).

acme is a Pro workspace whose Telegram chat, webhook signing secret and reviewer's address live in
HITL_ACME_… variables; charlie (globex's admin) and dana (the admin of a Free workspace) try to send to
them — when saving a contact, with a test message, and through a contact saved before the rule.
"""

import ast
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from audit.models import AuditRecord
from contacts.models import Contact, Delivery, ReferenceGrant
from contacts.outbox import delivery_test_create
from contacts.refs import PORTAL_ENVIRONMENT, is_portal_variable
from contacts.sending import deliveries_send_due
from tests.loopback import SECRET

from ..helpers import (
    APP_PACKAGES,
    error_of,
    make_config,
    make_member,
    make_rule,
    make_token,
    make_workspace,
    publish,
    register_gate,
)

ACME_ENV = {
    "HITL_ACME_TELEGRAM_CHAT": "-1001234567",
    "HITL_ACME_HOOK_SECRET": SECRET,
    "HITL_ACME_REVIEWER_EMAIL": "bob@acme.test",
}
GRANT = "python manage.py hitl refs grant {slug} {name}"


@pytest.fixture
def acme_env(monkeypatch) -> dict[str, str]:
    for name, value in ACME_ENV.items():
        monkeypatch.setenv(name, value)
    return ACME_ENV


@pytest.fixture
def hobby(db):
    return make_workspace("hobby", plan="free")


@pytest.fixture
def dana(hobby):
    return make_member(hobby, "dana@hobby.test", "admin")


@pytest.fixture
def outsider(request, make_api, globex, charlie, hobby, dana):
    """Another Pro workspace's admin, or a Free workspace's: (their workspace, their API)."""
    workspace, user = (globex, charlie) if request.param == "globex" else (hobby, dana)
    return workspace, make_api(make_token(workspace, user=user))


OUTSIDERS = pytest.mark.parametrize("outsider", ["globex", "hobby"], indirect=True)


@pytest.mark.django_db
@OUTSIDERS
@pytest.mark.parametrize(
    ("contact", "field", "name"),
    [
        (
            {"channel": "telegram", "channel_ref": "${HITL_ACME_TELEGRAM_CHAT}"},
            "channel_ref",
            "HITL_ACME_TELEGRAM_CHAT",
        ),
        ({"channel": "email", "channel_ref": "${HITL_ACME_REVIEWER_EMAIL}"}, "channel_ref", "HITL_ACME_REVIEWER_EMAIL"),
        (
            {"channel": "webhook", "channel_ref": "${HITL_OWN_HOOK}", "secret_ref": "${HITL_ACME_HOOK_SECRET}"},
            "secret_ref",
            "HITL_ACME_HOOK_SECRET",
        ),
    ],
)
def test_another_workspace_cannot_save_a_contact_naming_a_pro_workspaces_variable(
    acme, acme_env, outsider, contact, field, name
):
    workspace, api = outsider
    own = {k: v.replace("HITL_OWN_", f"HITL_{workspace.slug.upper()}_") for k, v in contact.items()}
    config = make_config(workspace)
    response = api.post(f"/api/v1/configs/{config.public_id}/contacts", {"name": "Theirs", **own})
    assert response.status_code == 400, response.text
    message = error_of(response)["fields"][field]
    assert message.startswith(f"{field} names {name}, which is not this workspace's to use")
    assert GRANT.format(slug=workspace.slug, name=name) in message
    assert ACME_ENV[name] not in message
    assert list(error_of(response)["fields"]) == [field]  # their own variable passes
    assert not Contact.objects.exists()


@pytest.mark.django_db
def test_the_contacts_page_refuses_it_too_next_to_the_field(acme, acme_env, globex, charlie):
    config = make_config(globex)
    page = Client()
    page.force_login(charlie)
    url = f"/hitl/configs/{config.public_id}/contacts/"
    response = page.post(url, {"name": "Theirs", "channel": "email", "channel_ref": "${HITL_ACME_REVIEWER_EMAIL}"})
    assert response.status_code == 400
    html = response.content.decode()
    assert "HITL_ACME_REVIEWER_EMAIL, which is not this workspace" in html
    assert GRANT.format(slug="globex", name="HITL_ACME_REVIEWER_EMAIL") in html
    assert not Contact.objects.exists()


def legacy_contact(config, **fields) -> Contact:
    """A contact as saved before references were judged: written as it was then, unchecked."""
    return Contact.objects.create(config=config, name="Saved before", **fields)


@pytest.mark.django_db
@OUTSIDERS
def test_a_test_message_to_a_contact_saved_before_the_rule_is_refused(acme, acme_env, outsider):
    workspace, api = outsider
    config = make_config(workspace)
    contact = legacy_contact(config, channel="telegram", channel_ref="${HITL_ACME_TELEGRAM_CHAT}")
    response = api.post(f"/api/v1/configs/{config.public_id}/contacts/{contact.public_id}/test")
    assert response.status_code == 400, response.text
    message = error_of(response)["fields"]["channel_ref"]
    assert "HITL_ACME_TELEGRAM_CHAT, which is not this workspace's to use" in message
    assert GRANT.format(slug=workspace.slug, name="HITL_ACME_TELEGRAM_CHAT") in message
    assert not Delivery.objects.exists()


@pytest.fixture
def saved_before(request, acme, acme_env, globex, hobby, receiver, monkeypatch) -> dict:
    """globex's (or hobby's) email contact and webhook contact, both saved before the rule: the email to
    acme's reviewer, the webhook (its own URL) signed with acme's secret."""
    workspace = globex if request.param == "globex" else hobby
    own_url = f"HITL_{workspace.slug.upper()}_HOOK"
    monkeypatch.setenv(own_url, receiver.url)
    config = make_config(workspace)
    mail = legacy_contact(config, channel="email", channel_ref="${HITL_ACME_REVIEWER_EMAIL}")
    hook = legacy_contact(
        config, channel="webhook", channel_ref="${" + own_url + "}", secret_ref="${HITL_ACME_HOOK_SECRET}"
    )
    return {"workspace": workspace, "config": config, "contacts": [mail, hook]}


def queued(world: dict) -> list[Delivery]:
    """What was queued to the contacts before the upgrade: a Free workspace's test messages (it may not
    publish a rule), a Pro one's request under a published rule."""
    if world["workspace"].plan == "free":
        return [delivery_test_create(contact=contact) for contact in world["contacts"]]
    world["rule"] = make_rule(world["config"], message="Check", notify=[c.public_id for c in world["contacts"]])
    world["version"] = publish(world["config"])
    make_token(world["workspace"], engine="their-engine")
    approval = register_gate(world)
    return list(Delivery.objects.filter(approval=approval, event="requested"))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("saved_before", ["globex", "hobby"], indirect=True)
def test_at_send_time_the_delivery_fails_naming_the_variable_and_nothing_is_sent(saved_before, receiver, mailbox):
    slug = saved_before["workspace"].slug
    ids = [delivery.pk for delivery in queued(saved_before)]
    deliveries_send_due()
    failed = {d.channel: d for d in Delivery.objects.filter(pk__in=ids)}
    for channel, name in (("email", "HITL_ACME_REVIEWER_EMAIL"), ("webhook", "HITL_ACME_HOOK_SECRET")):
        delivery = failed[channel]
        assert (delivery.status, delivery.attempts) == ("failed", 1)  # for good: retrying cannot help
        assert delivery.last_error.startswith(f"{name} is not this workspace's to use")
        assert GRANT.format(slug=slug, name=name) in delivery.last_error
    assert mailbox.messages == []
    assert receiver.received == [] and receiver.bad_signatures == 0


@pytest.mark.django_db(transaction=True)
def test_the_host_grants_a_variable_and_revokes_it_audited(acme, globex, charlie, acme_env, mailbox, monkeypatch):
    config = make_config(globex)
    contact = legacy_contact(config, channel="email", channel_ref="${HITL_ACME_REVIEWER_EMAIL}")
    listed = StringIO()
    call_command("hitl", "refs", "list", stdout=listed)
    assert f"globex HITL_ACME_REVIEWER_EMAIL refused, named by {contact.public_id}" in listed.getvalue()

    out = StringIO()
    call_command("hitl", "refs", "grant", "globex", "HITL_ACME_REVIEWER_EMAIL", stdout=out)
    assert out.getvalue().strip() == "globex HITL_ACME_REVIEWER_EMAIL granted"
    listed = StringIO()
    call_command("hitl", "refs", "list", "globex", stdout=listed)
    assert listed.getvalue().strip() == "globex HITL_ACME_REVIEWER_EMAIL granted"
    rule = make_rule(config, message="Check", notify=[contact.public_id])
    make_token(globex, engine="their-engine")
    world = {"workspace": globex, "config": config, "rule": rule, "version": publish(config)}
    deliveries_send_due()
    approval = register_gate(world)
    deliveries_send_due()
    assert [rcpt for rcpt, _ in mailbox.messages] == [["bob@acme.test"]]  # the host chose to let it through

    call_command("hitl", "refs", "revoke", "globex", "HITL_ACME_REVIEWER_EMAIL", stdout=StringIO())
    register_gate(world, run_id="run_2")
    deliveries_send_due()
    assert len(mailbox.messages) == 1
    second = Delivery.objects.exclude(approval=approval).get(event="requested")
    assert second.status == "failed" and second.last_error.startswith("HITL_ACME_REVIEWER_EMAIL is not this")
    audited = AuditRecord.objects.filter(workspace=globex, action__startswith="refs.").order_by("id")
    assert [(r.action, r.object, r.actor) for r in audited] == [
        ("refs.granted", "HITL_ACME_REVIEWER_EMAIL", "system"),
        ("refs.revoked", "HITL_ACME_REVIEWER_EMAIL", "system"),
    ]
    assert not ReferenceGrant.objects.exists()


@pytest.mark.django_db
def test_a_longer_slug_owns_its_own_prefix_and_tied_slugs_own_nothing(alice_api, acme, monkeypatch):
    eu = make_workspace("acme-eu")
    eu_admin = make_member(eu, "erin@acme-eu.test", "admin")
    config = make_config(acme)
    path = f"/api/v1/configs/{config.public_id}/contacts"
    taken = alice_api.post(path, {"name": "EU", "channel": "email", "channel_ref": "${HITL_ACME_EU_ONCALL}"})
    assert taken.status_code == 400 and "HITL_ACME_EU_ONCALL, which is not" in error_of(taken)["fields"]["channel_ref"]
    own = alice_api.post(path, {"name": "Mine", "channel": "email", "channel_ref": "${HITL_ACME_ONCALL}"})
    assert own.status_code == 201, own.text

    from contacts.services import contact_create

    assert contact_create(config=make_config(eu), name="EU", channel="email", channel_ref="${HITL_ACME_EU_ONCALL}")
    make_workspace("acme_eu")  # now two workspaces give HITL_ACME_EU_: neither owns it
    with pytest.raises(Exception, match="HITL_ACME_EU_ONCALL, which is not this workspace"):
        contact_create(
            config=make_config(eu, name="Other"), name="EU", channel="email", channel_ref="${HITL_ACME_EU_ONCALL}"
        )
    del eu_admin


@pytest.mark.django_db
def test_the_portals_own_settings_are_nobodys_whatever_the_slug(monkeypatch):
    telegram = make_workspace("telegram")
    from contacts.services import contact_create

    with pytest.raises(Exception, match="HITL_TELEGRAM_BOT_TOKEN, which is one of the portal's own settings"):
        contact_create(
            config=make_config(telegram), name="Bot", channel="email", channel_ref="${HITL_TELEGRAM_BOT_TOKEN}"
        )
    with pytest.raises(CommandError, match="HITL_RECEIPT_KEY is one of the portal's own settings"):
        call_command("hitl", "refs", "grant", "telegram", "HITL_RECEIPT_KEY")
    with pytest.raises(CommandError, match="not a variable's name"):
        call_command("hitl", "refs", "grant", "telegram", "DATABASE_URL")
    assert not ReferenceGrant.objects.exists()


# make run's demo variables: a contact's, not the portal's (launch/run.py starts their receiver).
DEMO = {"HITL_DEMO_WEBHOOK", "HITL_DEMO_WEBHOOK_SECRET", "HITL_DEMO_REVIEWER_EMAIL"}


def test_every_variable_the_portal_reads_is_one_no_contact_may_name():
    """The list in contacts/refs.py held to the code: each HITL_ name read from the environment."""
    root = Path(__file__).resolve().parents[2]
    read = set()
    for package in APP_PACKAGES + ("gunicorn.conf.py",):
        paths = [root / package] if package.endswith(".py") else (root / package).rglob("*.py")
        for path in paths:
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and re.fullmatch(r"HITL_[A-Z0-9_]+", node.value)
                ):
                    read.add(node.value)
    assert read - DEMO, "the scan found nothing: it is looking in the wrong place"
    assert {name for name in read - DEMO if not is_portal_variable(name)} == set()
    assert PORTAL_ENVIRONMENT <= read  # and the list names nothing the code no longer reads
