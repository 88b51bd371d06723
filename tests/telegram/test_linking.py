"""Linking a Telegram account: a one-time code from the account page, sent to the bot in a private chat."""

import re
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from audit.models import AuditRecord
from integrations.models import TelegramAccount, TelegramLinkCode
from tests.helpers import travel

from .conftest import BOB_TG, CHARLIE_TG, post_update, press, private

pytestmark = pytest.mark.usefixtures("fake_telegram")


def make_code(client, user) -> str:
    client.force_login(user)
    page = client.post("/hitl/account/telegram/code")
    assert page.status_code == 200
    assert page["Cache-Control"] == "no-store"
    return re.search(r'<p class="link-code"><code>([A-Z0-9]+)</code>', page.content.decode())[1]


def test_the_account_page_offers_to_link_telegram(client, bob):
    client.force_login(bob)

    page = client.get("/hitl/account/").content.decode()

    assert "Link Telegram" in page
    assert 'action="/hitl/account/telegram/code"' in page


def test_without_a_bot_the_account_page_says_telegram_is_not_set_up_and_hands_out_no_code(client, bob, settings):
    settings.HITL_TELEGRAM_BOT_TOKEN = ""
    client.force_login(bob)

    page = client.get("/hitl/account/").content.decode()
    posted = client.post("/hitl/account/telegram/code", follow=True).content.decode()

    assert "Telegram is not set up on this portal" in page
    assert "Link Telegram" not in page and 'action="/hitl/account/telegram/code"' not in page
    assert "there is no bot to send a code to" in posted
    assert not TelegramLinkCode.objects.filter(user=bob).exists()


def test_the_account_page_needs_a_login(client, db):
    assert client.get("/hitl/account/").status_code == 302
    assert client.post("/hitl/account/telegram/code").status_code == 302


def test_a_code_sent_to_the_bot_links_the_account_and_the_presses_decide_as_its_user(
    live_server, fake_telegram, client, bob, request_for_deletion
):
    code = make_code(client, bob)
    assert TelegramLinkCode.objects.get(user=bob).digest != code  # kept as a digest, never in clear

    post_update(live_server.url, private(f"/start {code}", user=BOB_TG))

    account = TelegramAccount.objects.get(user=bob)
    assert (account.telegram_user_id, account.telegram_username) == (BOB_TG, f"user{BOB_TG}")
    assert "now decides as bob@acme.test" in fake_telegram.calls_to("sendMessage")[-1]["text"]
    assert AuditRecord.objects.filter(action="telegram.linked", object="bob@acme.test").exists()
    assert "Linked to Telegram user <strong>@user1001</strong>" in client.get("/hitl/account/").content.decode()

    post_update(live_server.url, press(request_for_deletion, "approve", user=BOB_TG))
    request_for_deletion.refresh_from_db()
    assert request_for_deletion.decided_by_email == "bob@acme.test"


def test_a_code_works_once(live_server, fake_telegram, client, bob):
    code = make_code(client, bob)
    post_update(live_server.url, private(code, user=BOB_TG))

    post_update(live_server.url, private(code, user=CHARLIE_TG))

    assert list(TelegramAccount.objects.values_list("telegram_user_id", flat=True)) == [BOB_TG]
    assert "not one the HITL portal gave out, or it has expired" in fake_telegram.calls_to("sendMessage")[-1]["text"]


def test_a_code_expires_after_ten_minutes(live_server, fake_telegram, client, bob):
    code = make_code(client, bob)

    with travel(timedelta(minutes=11)):
        from integrations.telegram_accounts import LinkRefused, telegram_account_link

        with pytest.raises(LinkRefused):
            telegram_account_link(code=code, telegram_user_id=BOB_TG)

    assert not TelegramAccount.objects.exists()


def test_a_code_typed_in_a_group_links_nobody(live_server, fake_telegram, client, bob):
    code = make_code(client, bob)
    update = private(code, user=BOB_TG)
    update["message"]["chat"] = {"id": -100555, "type": "supergroup"}

    post_update(live_server.url, update)

    assert not TelegramAccount.objects.exists()


def test_a_late_code_is_refused(live_server, fake_telegram, client, bob):
    code = make_code(client, bob)

    post_update(live_server.url, private(code, user=BOB_TG, date=int(time.time()) - 3600))

    assert not TelegramAccount.objects.exists()


def test_unlinking_stops_the_presses_deciding(live_server, fake_telegram, client, bob, request_for_deletion):
    TelegramAccount.objects.create(user=bob, telegram_user_id=BOB_TG)
    client.force_login(bob)

    client.post("/hitl/account/telegram/unlink")
    post_update(live_server.url, press(request_for_deletion, "approve", user=BOB_TG))

    request_for_deletion.refresh_from_db()
    assert request_for_deletion.status == "pending"
    assert "link it on your account page" in fake_telegram.calls_to("answerCallbackQuery")[0]["text"]


def test_set_webhook_registers_the_portals_address_and_secret(fake_telegram, capsys):
    call_command("hitl", "telegram", "set-webhook")

    [registered] = fake_telegram.calls_to("setWebhook")
    assert registered["url"] == "https://portal.example/integrations/telegram/webhook"
    assert registered["secret_token"] == "a-webhook-secret_of-the-portal"
    assert registered["allowed_updates"] == ["message", "callback_query"]
    assert "https://portal.example/integrations/telegram/webhook" in capsys.readouterr().out


def test_set_webhook_refuses_a_plain_http_address(fake_telegram):
    with pytest.raises(CommandError, match="https:// addresses only"):
        call_command("hitl", "telegram", "set-webhook", "--url", "http://portal.example/hook")
    assert fake_telegram.calls == []


def test_set_webhook_says_what_telegram_refused(fake_telegram):
    fake_telegram.fail("setWebhook", 401, "Unauthorized")

    with pytest.raises(CommandError, match="Telegram refused setWebhook: Unauthorized"):
        call_command("hitl", "telegram", "set-webhook")
