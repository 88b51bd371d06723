"""The account page's Telegram section in Chromium: from the header to a one-time code, no CSP violation."""

import re

import pytest
from playwright.sync_api import expect

from integrations.models import TelegramAccount, TelegramLinkCode

from .conftest import login
from .test_csp import watch_csp


@pytest.mark.server_env(HITL_TELEGRAM_BOT_TOKEN="123456:test-bot-token")  # a bot is set up: someone to send a code to
def test_a_reviewer_makes_a_link_code_and_unlinks_from_the_account_page(page, bob):
    violations = watch_csp(page)
    login(page, "bob@acme.test")

    page.click("header .who a.email")  # the email in the header is the way to one's account
    expect(page.locator("h1")).to_have_text("Your account")
    page.click("#telegram button[type=submit]")

    code = page.locator("#telegram .link-code code").inner_text()
    assert re.fullmatch(r"[A-Z0-9]{10}", code)
    assert TelegramLinkCode.objects.filter(user=bob).exists()
    expect(page.locator("#telegram")).to_contain_text("Send this code to the bot in a private chat within 10 minutes")

    TelegramAccount.objects.create(user=bob, telegram_user_id=1001, telegram_username="bob_tg")
    page.goto("/hitl/account/")
    expect(page.locator("#telegram")).to_contain_text("Linked to Telegram user @bob_tg")
    page.click("#telegram button[type=submit]")  # Unlink Telegram
    expect(page.locator(".flash")).to_contain_text("Telegram unlinked")
    assert not TelegramAccount.objects.filter(user=bob).exists()
    assert violations == []
