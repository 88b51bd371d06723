"""Step-up (API.md, "Step-up"): a rule's `require_passkey`, and every door but the request's page
answering 403 `passkey_required` with a link to that page. Rejecting never needs a passkey.

What the page itself does with a passkey is driven in Chromium: tests/browser/test_passkeys.py.
"""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from approvals.engine.register import Sent, register
from approvals.models import ApprovalRequest
from approvals.review.links import link_url_for
from audit.models import AuditRecord
from contacts.models import Delivery
from contacts.sending import deliveries_send_due
from contacts.services import contact_create
from passkeys.models import Passkey
from tests.helpers import PASSWORD, error_of, make_config, make_rule, make_token, publish
from tests.loopback import parts
from workspaces.models import ApiToken


@pytest.fixture
def step_up_world(acme, alice, bob, monkeypatch, settings):
    """acme's config whose one rule needs a passkey to approve, bob's email contact told of it, and a request."""
    settings.HITL_BASE_URL = "https://portal.example"
    monkeypatch.setenv("HITL_ACME_BOB_EMAIL", "bob@acme.test")
    config = make_config(acme, pass_information_level="full")
    contact = contact_create(config=config, name="Bob", channel="email", channel_ref="${HITL_ACME_BOB_EMAIL}")
    rule = make_rule(config, require_passkey=True, notify=[contact.public_id])
    version = publish(config, alice)
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
    return {"config": config, "rule": rule, "approval": approval}


def _status(approval) -> str:
    return ApprovalRequest.objects.get(pk=approval.pk).status


def _page(approval) -> str:
    return f"https://portal.example/hitl/approvals/{approval.public_id}/"


def test_a_rule_asks_for_a_passkey_through_the_api_and_its_version_freezes_it(alice_api, acme):
    config = make_config(acme)
    created = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", {"require_passkey": True})
    assert created.status_code == 201, created.text
    rule = created.json()
    assert rule["require_passkey"] is True

    refused = alice_api.patch(f"/api/v1/configs/{config.public_id}/rules/{rule['id']}", {"require_passkey": "maybe"})
    assert refused.status_code == 400 and "require_passkey" in error_of(refused)["fields"]
    # A run grant would approve the run's later calls, unseen and without a passkey.
    refused = alice_api.patch(f"/api/v1/configs/{config.public_id}/rules/{rule['id']}", {"allow_run_grant": True})
    assert refused.status_code == 400 and "passkey" in error_of(refused)["fields"]["allow_run_grant"]

    published = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", {"note": "step-up"})
    assert published.status_code == 201
    assert published.json()["rules"][0]["require_passkey"] is True
    # The draft changes, the version does not.
    alice_api.patch(f"/api/v1/configs/{config.public_id}/rules/{rule['id']}", {"require_passkey": False})
    version = alice_api.get(f"/api/v1/configs/{config.public_id}/versions/1").json()
    assert version["rules"][0]["require_passkey"] is True
    assert alice_api.get(f"/api/v1/configs/{config.public_id}/rules/{rule['id']}").json()["require_passkey"] is False


def test_the_version_page_and_the_rule_editor_show_the_step_up(client, step_up_world, alice):
    client.force_login(alice)
    config = step_up_world["config"]
    version = client.get(f"/hitl/configs/{config.public_id}/versions/1/")
    assert version.status_code == 200 and "passkey to approve" in version.content.decode()
    editor = client.get(f"/hitl/configs/{config.public_id}/rules/{step_up_world['rule'].public_id}/")
    assert editor.status_code == 200
    assert 'name="require_passkey"' in editor.content.decode()


def test_the_rule_editor_sets_and_clears_the_step_up(client, alice, acme):
    config = make_config(acme)
    rule = make_rule(config)
    client.force_login(alice)
    url = f"/hitl/configs/{config.public_id}/rules/{rule.public_id}/"
    data = {"kind": "delete", "which": "any", "point": "entry", "enabled": "on", "order": 10}
    assert client.post(url, {**data, "require_passkey": "on"}).status_code == 302
    rule.refresh_from_db()
    assert rule.require_passkey is True
    assert "passkey to approve" in client.get(f"/hitl/configs/{config.public_id}/rules/").content.decode()
    client.post(url, data)
    rule.refresh_from_db()
    assert rule.require_passkey is False


def test_the_api_answers_passkey_required_with_the_page_and_rejecting_needs_none(bob_api, step_up_world):
    approval = step_up_world["approval"]
    url = f"/api/v1/approvals/{approval.public_id}/decision"

    refused = bob_api.post(url, {"decision": "approve"})
    assert refused.status_code == 403
    error = error_of(refused)
    assert error["code"] == "passkey_required"
    assert error["url"] == _page(approval) and _page(approval) in error["message"]
    assert _status(approval) == "pending"

    rejected = bob_api.post(url, {"decision": "reject", "reason": "Not this customer."})
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"
    # Decided: approving answers the first decision, as for any decided request.
    again = bob_api.post(url, {"decision": "approve"})
    assert again.status_code == 200 and again.json()["already_decided"] is True


def test_the_cli_refuses_to_approve_and_names_the_page_but_denies(step_up_world):
    approval = step_up_world["approval"]
    with pytest.raises(CommandError, match="needs a passkey") as refused:
        call_command("hitl", "approve", approval.public_id, "--as", "bob@acme.test", stdout=StringIO())
    assert _page(approval) in str(refused.value)
    assert _status(approval) == "pending"

    out = StringIO()
    call_command("hitl", "deny", approval.public_id, "--as", "bob@acme.test", "--reason", "No.", stdout=out)
    assert _status(approval) == "rejected"


def test_a_one_click_link_sends_the_reviewer_to_the_page_to_approve_and_still_rejects(step_up_world):
    approval = step_up_world["approval"]
    delivery = Delivery.objects.get(approval=approval, event="requested")
    url = link_url_for(delivery=delivery, email="bob@acme.test")
    path = url[url.index("/hitl/r/") :]
    browser = Client()

    confirm = browser.get(path)
    assert confirm.status_code == 200
    assert f'href="/hitl/approvals/{approval.public_id}/"' in confirm.content.decode()
    assert "needs your passkey" in confirm.content.decode()

    refused = browser.post(path, {"decision": "approve"})
    assert refused.status_code == 403
    body = refused.content.decode()
    assert 'data-code="passkey_required"' in body and f'href="{_page(approval)}"' in body
    assert _status(approval) == "pending"
    assert Delivery.objects.get(pk=delivery.pk).link_used_at is None  # nothing decided: the link still works

    done = browser.post(path, {"decision": "reject", "reason": "Wrong customer"})
    assert done.status_code == 200 and _status(approval) == "rejected"


def test_the_email_says_approving_needs_a_passkey(step_up_world, mailbox):
    deliveries_send_due()
    [(_, mail)] = mailbox.messages
    assert "Approving needs your passkey" in parts(mail)["text/plain"]


def test_the_page_refuses_an_approval_without_a_passkey_on_the_card(client, step_up_world, bob):
    approval = step_up_world["approval"]
    client.force_login(bob)
    page = client.get(f"/hitl/approvals/{approval.public_id}/").content.decode()
    assert "data-step-up=" in page and 'name="passkey_assertion"' in page and "js/passkeys.js" in page
    queue = client.get("/hitl/approvals/").content.decode()
    assert "Approve with passkey" in queue

    answered = client.post(f"/hitl/approvals/{approval.public_id}/decide/", {"decision": "approve"}, follow=True)
    assert "needs a passkey" in answered.content.decode()
    assert _status(approval) == "pending"
    forged = client.post(
        f"/hitl/approvals/{approval.public_id}/decide/",
        {"decision": "approve", "passkey_assertion": '{"id": "x", "response": {"clientDataJSON": "e30"}}'},
        follow=True,
    )
    assert "nothing was decided" in forged.content.decode().lower()
    assert _status(approval) == "pending"

    client.post(f"/hitl/approvals/{approval.public_id}/decide/", {"decision": "reject", "reason": "No"})
    assert _status(approval) == "rejected"


def test_a_step_up_challenge_needs_a_registered_passkey_and_a_reviewer(client, step_up_world, bob, charlie):
    approval = step_up_world["approval"]
    url = f"/hitl/approvals/{approval.public_id}/decide/step-up/"
    client.force_login(bob)
    none_yet = client.post(url)
    assert none_yet.status_code == 400 and "register one on your account page" in none_yet.json()["error"]["message"]

    outsider = Client()
    outsider.force_login(charlie)
    assert outsider.post(url).status_code == 404


def _passkey(user, name="Work laptop"):
    return Passkey.objects.create(user=user, name=name, credential_id=f"cred-{name}", public_key=b"\x00")


def test_the_account_page_lists_renames_and_removes_ones_own_passkeys_audited(client, bob, alice):
    mine = _passkey(bob)
    theirs = _passkey(alice, "Alice's key")
    client.force_login(bob)

    page = client.get("/hitl/account/").content.decode()
    assert "Work laptop" in page and "Alice's key" not in page and 'id="passkey-register"' in page

    client.post(f"/hitl/account/passkeys/{mine.public_id}/rename/", {"name": "Phone"})
    assert Passkey.objects.get(pk=mine.pk).name == "Phone"
    confirmed = {"password": PASSWORD}  # a session alone removes nothing (tests/passkeys/test_enrolment.py)
    assert client.post(f"/hitl/account/passkeys/{theirs.public_id}/remove/", confirmed).status_code == 404
    assert client.post(f"/hitl/account/passkeys/{mine.public_id}/remove/", confirmed).status_code == 302
    assert not Passkey.objects.filter(pk=mine.pk).exists() and Passkey.objects.filter(pk=theirs.pk).exists()
    actions = list(AuditRecord.objects.filter(object=mine.public_id).order_by("id").values_list("action", flat=True))
    assert actions == ["passkey.renamed", "passkey.removed"]


def test_a_registration_with_no_challenge_of_ones_own_is_refused(client, bob, settings):
    settings.HITL_BASE_URL = "https://portal.example"
    client.force_login(bob)
    options = client.post(
        "/hitl/account/passkeys/options/", {"password": PASSWORD}, content_type="application/json"
    ).json()
    assert (
        options["rp"]["id"] == "portal.example" and options["authenticatorSelection"]["userVerification"] == "required"
    )
    forged = client.post(
        "/hitl/account/passkeys/",
        {"name": "Key", "credential": {"id": "x", "response": {"clientDataJSON": "e30"}}},
        content_type="application/json",
    )
    assert forged.status_code in (400, 403) and not Passkey.objects.exists()
    assert client.post("/hitl/account/passkeys/", "not json", content_type="application/json").status_code == 400


def test_passkeys_die_with_their_user(bob):
    _passkey(bob)
    get_user_model().objects.filter(pk=bob.pk).delete()
    assert not Passkey.objects.exists()
