"""A stand-in hears their delegator's personal notices about work, on every channel of their own (docs/people.md).

The requester's notice is what the cluster runs once a request ends (integrations.requester_notices): here it
is run in the test's process against the real fakes on loopback — SMTP, a push service, the Bot API.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from integrations.models import TelegramAccount
from integrations.passkey_notices import passkey_changed_notify
from integrations.requester_notices import requester_notify
from tests import loopback
from tests.factories import make_approval
from tests.helpers import make_config, make_member
from tests.loopback import FakeBrowser, FakeTelegram
from tests.push import conftest as push_conftest
from tests.push.conftest import subscribe

pytestmark = pytest.mark.django_db

# The push service on loopback and the portal's VAPID keys, as the push tests have them.
push_service = loopback.push_service
vapid_env = push_conftest.vapid_env

BOT_TOKEN = "123456:TEST-bot-token"
BOB_TG, DAVE_TG = 1001, 1004


@pytest.fixture
def fake_telegram(settings):
    fake = FakeTelegram(token=BOT_TOKEN).start()
    settings.HITL_TELEGRAM_API_URL = fake.url
    settings.HITL_TELEGRAM_BOT_TOKEN = BOT_TOKEN
    yield fake
    fake.stop()


@pytest.fixture
def dave(acme):
    return make_member(acme, "dave@acme.test", "reviewer")


@pytest.fixture
def channels(bob, dave, push_service, vapid_env, fake_telegram) -> dict:
    """bob and dave each linked Telegram and subscribed a phone; both subscribed the team's shared tablet."""
    browsers = {name: FakeBrowser(push_service, name) for name in ("bob-phone", "dave-phone", "tablet")}
    for user, own in ((bob, "bob-phone"), (dave, "dave-phone")):
        subscribe(user, browsers[own])
        subscribe(user, browsers["tablet"])
    TelegramAccount.objects.create(user=bob, telegram_user_id=BOB_TG)
    TelegramAccount.objects.create(user=dave, telegram_user_id=DAVE_TG)
    return browsers


def ended_for_bob(alice_api, acme) -> object:
    approval = make_approval(
        make_config(acme, "Support agent", pass_information_level="full"), requested_by="bob@acme.test"
    )
    decided = alice_api.post(
        f"/api/v1/approvals/{approval.public_id}/decision", json={"decision": "reject", "reason": "Not this one."}
    )
    assert decided.status_code == 200, decided.text
    return approval


def test_a_stand_in_hears_how_the_delegators_request_ended_on_each_of_their_channels_once(
    alice_api, bob_api, acme, channels, mailbox, push_service, fake_telegram
):
    until = (timezone.now() + timedelta(days=3)).isoformat()
    assert bob_api.put("/api/v1/me/delegation", {"delegate": "dave@acme.test", "until": until}).status_code == 200
    approval = ended_for_bob(alice_api, acme)

    reached = requester_notify(approval.pk)

    assert reached == [
        "email",
        "push",
        "telegram",
        "email to dave@acme.test",
        "push to dave@acme.test",
        "telegram to dave@acme.test",
    ]
    by_recipient = {tuple(recipients): message for recipients, message in mailbox.messages}
    assert set(by_recipient) == {("bob@acme.test",), ("dave@acme.test",)}
    to_dave = by_recipient[("dave@acme.test",)]
    assert to_dave["Subject"].startswith("For bob@acme.test: Rejected: ")
    assert "You stand in for bob@acme.test" in to_dave.get_payload()
    assert "Not this one." in to_dave.get_payload()
    assert f"/hitl/approvals/{approval.public_id}/" in to_dave.get_payload()
    # Each browser once: the tablet both subscribed shows it once, as bob's.
    assert [len(push_service.messages_to(name)) for name in ("bob-phone", "dave-phone", "tablet")] == [1, 1, 1]
    dave_sees = channels["dave-phone"].read(push_service.messages_to("dave-phone")[0])
    assert dave_sees["title"].startswith("For bob@acme.test: ")
    chats = sorted(call["chat_id"] for call in fake_telegram.calls_to("sendMessage"))
    assert chats == [BOB_TG, DAVE_TG]


def test_without_a_live_delegation_only_the_requester_hears_it(alice_api, bob_api, acme, channels, mailbox):
    until = (timezone.now() + timedelta(days=3)).isoformat()
    bob_api.put("/api/v1/me/delegation", {"delegate": "dave@acme.test", "until": until})
    assert bob_api.delete("/api/v1/me/delegation").status_code == 204
    approval = ended_for_bob(alice_api, acme)

    assert requester_notify(approval.pk) == ["email", "push", "telegram"]
    assert [recipients for recipients, _ in mailbox.messages] == [["bob@acme.test"]]


def test_a_notice_about_the_account_itself_stays_with_its_holder(bob_api, bob, channels, mailbox, fake_telegram):
    until = (timezone.now() + timedelta(days=3)).isoformat()
    bob_api.put("/api/v1/me/delegation", {"delegate": "dave@acme.test", "until": until})

    reached = passkey_changed_notify(bob.pk, "registered", "Bob's laptop")

    assert reached == ["email", "push", "telegram"]
    assert [recipients for recipients, _ in mailbox.messages] == [["bob@acme.test"]]
    assert [call["chat_id"] for call in fake_telegram.calls_to("sendMessage")] == [BOB_TG]
