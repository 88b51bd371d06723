import itertools
import time

import pytest
import requests
from django.test.utils import override_settings

from tests.chat_fixtures import config, request_for_deletion  # noqa: F401 — this folder's fixtures
from tests.helpers import chat_world
from tests.loopback import FakeTelegram

BOT_TOKEN = "123456:TEST-bot-token"
WEBHOOK_SECRET = "a-webhook-secret_of-the-portal"
CHAT_REF = "${HITL_ACME_TELEGRAM_APPROVERS}"
CHAT = "-1001234567890"
LEADS = "-1009876543210"

# Telegram users of the tests: bob (acme's reviewer) and alice (acme's admin) link their accounts,
# charlie links his but only belongs to globex; 999 is nobody the portal knows.
BOB_TG, ALICE_TG, CHARLIE_TG, STRANGER_TG = 1001, 1002, 1003, 999

TELEGRAM_ENV = {
    "HITL_TELEGRAM_BOT_TOKEN": BOT_TOKEN,
    "HITL_TELEGRAM_WEBHOOK_SECRET": WEBHOOK_SECRET,
    "HITL_BASE_URL": "https://portal.example",
    "HITL_ACME_TELEGRAM_APPROVERS": CHAT,
    "HITL_ACME_TELEGRAM_LEADS": LEADS,
}

_update_ids = itertools.count(int(time.time()) * 10)


@pytest.fixture(scope="module")
def _telegram_api():
    fake = FakeTelegram(token=BOT_TOKEN).start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def live_server(django_db_setup, django_db_blocker, _telegram_api):
    """The portal as `make serve` runs it, started with the bot's variables (a test's settings cannot
    reach a server in another process)."""
    from tests.asgi import AsgiServer

    with django_db_blocker.unblock(), AsgiServer(HITL_TELEGRAM_API_URL=_telegram_api.url, **TELEGRAM_ENV) as server:
        server._live_server_modified_settings = override_settings()
        yield server


@pytest.fixture
def fake_telegram(_telegram_api, settings, monkeypatch):
    fake = _telegram_api
    fake.reset()
    settings.HITL_TELEGRAM_API_URL = fake.url
    settings.HITL_TELEGRAM_BOT_TOKEN = BOT_TOKEN
    settings.HITL_TELEGRAM_WEBHOOK_SECRET = WEBHOOK_SECRET
    settings.HITL_BASE_URL = "https://portal.example"
    monkeypatch.setenv("HITL_ACME_TELEGRAM_APPROVERS", CHAT)
    monkeypatch.setenv("HITL_ACME_TELEGRAM_LEADS", LEADS)
    yield fake


@pytest.fixture
def linked(alice, bob, charlie):
    """bob, alice and charlie have linked their Telegram accounts on their account pages."""
    from integrations.models import TelegramAccount

    for user, telegram_id in ((bob, BOB_TG), (alice, ALICE_TG), (charlie, CHARLIE_TG)):
        TelegramAccount.objects.create(user=user, telegram_user_id=telegram_id)


@pytest.fixture
def telegram_world(acme, bob):
    """acme's config whose delete rule tells the approvers' Telegram chat of every event."""
    return chat_world(
        acme, channel="telegram", approvers=("Approvers", CHAT_REF), leads=("Leads", "${HITL_ACME_TELEGRAM_LEADS}")
    )


def press(
    approval, decision: str, *, user: int, chat: str = CHAT, message_id: int = 100, update_id: int | None = None
) -> dict:
    """The update Telegram sends when someone presses an inline button on the request's message."""
    return {
        "update_id": next(_update_ids) if update_id is None else update_id,
        "callback_query": {
            "id": f"cbq-{user}-{decision}-{next(_update_ids)}",
            "from": {"id": user, "is_bot": False, "first_name": f"User{user}", "username": f"user{user}"},
            "message": {
                "message_id": message_id,
                "chat": {"id": int(chat), "type": "supergroup"},
                "date": int(time.time()),
            },
            "chat_instance": "42",
            "data": f"hitl:{decision}:{approval.public_id}",
        },
    }


def reply(text: str, *, user: int, to_message_id: int, chat: str = CHAT, date: int | None = None) -> dict:
    """A message replying to one of the bot's (its reason prompt)."""
    return {
        "update_id": next(_update_ids),
        "message": {
            "message_id": next(_update_ids) % 100000,
            "from": {"id": user, "is_bot": False, "first_name": f"User{user}"},
            "chat": {"id": int(chat), "type": "supergroup"},
            "date": int(time.time()) if date is None else date,
            "text": text,
            "reply_to_message": {"message_id": to_message_id, "chat": {"id": int(chat)}},
        },
    }


def private(text: str, *, user: int, date: int | None = None) -> dict:
    """A message to the bot in a private chat (a link code)."""
    return {
        "update_id": next(_update_ids),
        "message": {
            "message_id": next(_update_ids) % 100000,
            "from": {"id": user, "is_bot": False, "first_name": f"User{user}", "username": f"user{user}"},
            "chat": {"id": user, "type": "private"},
            "date": int(time.time()) if date is None else date,
            "text": text,
        },
    }


def post_update(base_url: str, update: dict, *, secret: str | None = WEBHOOK_SECRET) -> requests.Response:
    headers = {"X-Telegram-Bot-Api-Secret-Token": secret} if secret is not None else {}
    return requests.post(f"{base_url}/integrations/telegram/webhook", json=update, headers=headers, timeout=10)
