"""Adding and removing a passkey needs more than a session (API.md, "Step-up"; docs/passkeys.md): a stolen
cookie must not enrol the thief's authenticator, which would then approve passkey-only requests.

The whole ceremony with a real authenticator runs in Chromium (tests/browser/test_passkeys.py); here,
the refusals a session alone meets, the audit records, and the notice that reaches the person.
"""

import json

import pytest
from django.test import Client

from audit.models import AuditRecord
from passkeys.models import Passkey, PasskeyChallenge, Purpose
from tests.helpers import PASSWORD
from tests.loopback import Cluster, wait_for

OPTIONS = "/hitl/account/passkeys/options/"


@pytest.fixture
def bobs_session(bob) -> Client:
    """What a stolen session cookie gives: a signed-in browser, nothing more."""
    client = Client()
    client.force_login(bob)
    return client


@pytest.fixture
def bobs_passkey(bob) -> Passkey:
    return Passkey.objects.create(user=bob, name="Bob's laptop", credential_id="Y3JlZA", public_key=b"\x00")


def post_json(client: Client, path: str, body: dict):
    return client.post(path, json.dumps(body), content_type="application/json")


def test_it_refuses_a_registration_challenge_to_a_session_alone(bobs_session):
    refused = post_json(bobs_session, OPTIONS, {})
    assert refused.status_code == 403
    error = refused.json()["error"]
    assert error["code"] == "reauthentication_required"
    assert "password" in error["message"]
    assert not PasskeyChallenge.objects.filter(purpose=Purpose.REGISTER).exists()


def test_it_refuses_a_wrong_password_and_counts_it_toward_the_lockout(bobs_session, settings):
    settings.AXES_FAILURE_LIMIT = 3
    for _ in range(2):
        refused = post_json(bobs_session, OPTIONS, {"password": "guess"})
        assert refused.status_code == 403
        assert "not your password" in refused.json()["error"]["message"]
    assert post_json(bobs_session, OPTIONS, {"password": "guess"}).status_code == 429  # locked out, as at sign-in
    # Now even the right password is refused until the lockout ends.
    locked = post_json(bobs_session, OPTIONS, {"password": PASSWORD})
    assert locked.status_code == 429
    assert not PasskeyChallenge.objects.filter(purpose=Purpose.REGISTER).exists()


def test_it_issues_the_challenge_with_the_password_and_remembers_how(bobs_session, bob):
    answered = post_json(bobs_session, OPTIONS, {"password": PASSWORD})
    assert answered.status_code == 200, answered.content
    assert answered.json()["challenge"]
    challenge = PasskeyChallenge.objects.get(user=bob, purpose=Purpose.REGISTER)
    assert challenge.confirmed_with == "password"


def test_it_refuses_an_assertion_that_answers_no_challenge_of_this_person(bobs_session, bobs_passkey):
    forged = {"id": "Y3JlZA", "rawId": "Y3JlZA", "type": "public-key", "response": {"clientDataJSON": "e30"}}
    refused = post_json(bobs_session, OPTIONS, {"assertion": forged})
    assert refused.status_code == 403
    assert "nothing was changed" in refused.json()["error"]["message"]
    assert not PasskeyChallenge.objects.filter(purpose=Purpose.REGISTER).exists()


def test_it_offers_a_passkey_confirmation_only_to_someone_who_has_one(bobs_session, bob):
    none_yet = bobs_session.post("/hitl/account/passkeys/confirm/")
    assert none_yet.status_code == 400
    assert "password" in none_yet.json()["error"]["message"]
    Passkey.objects.create(user=bob, name="Bob's laptop", credential_id="Y3JlZA", public_key=b"\x00")
    offered = bobs_session.post("/hitl/account/passkeys/confirm/")
    assert offered.status_code == 200
    assert [c["id"] for c in offered.json()["allowCredentials"]] == ["Y3JlZA"]


def test_a_session_alone_cannot_remove_a_passkey(bobs_session, bobs_passkey):
    page = bobs_session.post(f"/hitl/account/passkeys/{bobs_passkey.public_id}/remove/", follow=True)
    assert "Confirm it is you" in page.content.decode()
    assert Passkey.objects.filter(pk=bobs_passkey.pk).exists()
    wrong = bobs_session.post(
        f"/hitl/account/passkeys/{bobs_passkey.public_id}/remove/", {"password": "guess"}, follow=True
    )
    assert "not your password" in wrong.content.decode()
    assert Passkey.objects.filter(pk=bobs_passkey.pk).exists()


@pytest.mark.django_db(transaction=True)  # the notice is queued on commit, for a cluster in another process
def test_removing_with_the_password_is_audited_and_told_to_the_person(bobs_session, bob, acme, bobs_passkey, mailbox):
    cluster = Cluster(EMAIL_URL=f"smtp://127.0.0.1:{mailbox.port}").start()
    try:
        with_password = bobs_session.post(
            f"/hitl/account/passkeys/{bobs_passkey.public_id}/remove/", {"password": PASSWORD}, follow=True
        )
        assert "removed" in with_password.content.decode()
        assert not Passkey.objects.filter(pk=bobs_passkey.pk).exists()
        record = AuditRecord.objects.get(workspace=acme, action="passkey.removed")
        assert record.data["confirmed_with"] == "password"
        wait_for(lambda: mailbox.messages, timeout=20, what="the notice of the removed passkey")
    finally:
        cluster.stop()
    recipients, message = mailbox.messages[0]
    assert recipients == ["bob@acme.test"]
    assert message["Subject"] == "A passkey was removed from your HITL Portal account"
    assert "Bob's laptop" in message.get_payload() and "/hitl/account/" in message.get_payload()
