"""The Telegram Bot API boundary: one client, one webhook secret check, one error type.

Everything that talks to Telegram goes through here, so tests point HITL_TELEGRAM_API_URL at a
fake Bot API on 127.0.0.1 and exercise the rest of the code unchanged. The Bot API is a dozen
JSON-over-HTTPS methods; a thin `requests` client keeps it synchronous like the outbox's other
transports (python-telegram-bot is an asyncio framework with its own update loop, far more than
calling four methods needs).
"""

import hmac
import re
import threading

import requests
from django.conf import settings

from contacts.models import reference_name
from contacts.transports.base import TransportError, resolve, retry_seconds

# Inside a button press Telegram shows a spinner until the call is answered: keep each call short.
INTERACTIVE_TIMEOUT_SECONDS = 2
BACKGROUND_TIMEOUT_SECONDS = 10

# Telegram's descriptions for a chat or message that will never accept the call: retrying is useless.
PERMANENT_MARKERS = (
    "chat not found",
    "bot was blocked",
    "bot was kicked",
    "not enough rights",
    "have no rights",
    "user is deactivated",
    "message to edit not found",
    "message can't be edited",
    "message is too long",
    "can't parse entities",
    "unauthorized",
)

_local = threading.local()


class TelegramError(TransportError):
    """A Bot API call that failed. `permanent`: retrying will not help; `retry_after`: Telegram's 429
    wait (seconds); `description`: Telegram's own words, lower-cased (never the token or the text)."""

    def __init__(self, message: str, *, permanent: bool = False, retry_after: int | None = None, description: str = ""):
        super().__init__(message, permanent=permanent, retry_after=retry_after)
        self.description = description


def _session() -> requests.Session:
    if not hasattr(_local, "session"):
        _local.session = requests.Session()
    return _local.session


def call(method: str, *, timeout: float = BACKGROUND_TIMEOUT_SECONDS, **params) -> dict | bool:
    """Call a Bot API method ("sendMessage") with JSON parameters; Telegram's `result`.

    A failure raises TelegramError naming the method and Telegram's description, never the token
    (it is part of the URL, so requests' own messages are never passed on).
    """
    token = settings.HITL_TELEGRAM_BOT_TOKEN
    if not token:
        raise TelegramError("HITL_TELEGRAM_BOT_TOKEN is not set", permanent=True)
    url = f"{settings.HITL_TELEGRAM_API_URL}/bot{token}/{method}"
    try:
        response = _session().post(url, json=params, timeout=timeout)
    except requests.Timeout:
        raise TelegramError(f"Telegram {method} did not answer within {timeout} s") from None
    except requests.RequestException as error:
        raise TelegramError(f"Telegram {method} failed: {type(error).__name__}") from None
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    if response.status_code == 200 and body.get("ok"):
        return body.get("result")
    description = str(body.get("description") or f"HTTP {response.status_code}")[:200]
    lowered = description.lower()
    if response.status_code == 429:
        wait = retry_seconds(
            (body.get("parameters") or {}).get("retry_after") if isinstance(body.get("parameters"), dict) else None
        )
        raise TelegramError(
            f"Telegram rate-limited {method} (retry after {wait} s)", retry_after=wait, description=lowered
        )
    if response.status_code >= 500:
        raise TelegramError(f"HTTP {response.status_code} from Telegram on {method}", description=lowered)
    permanent = response.status_code in (401, 403, 404) or any(marker in lowered for marker in PERMANENT_MARKERS)
    raise TelegramError(f"Telegram refused {method}: {description}", permanent=permanent, description=lowered)


# --- Chat references --------------------------------------------------------------------------

# A chat id (a user's, a group's: -…, a channel's: -100…) or a public channel's @username.
CHAT_ID = re.compile(r"^(-?\d{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$")


def chat_for(channel_ref: str) -> str:
    """The chat id a contact's `${HITL_…}` reference names, resolved now, never stored in the contact."""
    value = resolve(channel_ref)
    if not CHAT_ID.match(value):
        # The value stays out of the message: it may be something that was never meant to be shown.
        raise TelegramError(
            f"{reference_name(channel_ref)} does not hold a Telegram chat id (digits, -… or @channel)", permanent=True
        )
    return value


# --- Incoming updates -------------------------------------------------------------------------


class WebhookRefused(Exception):
    """Why an incoming update is not Telegram's: the message is safe to show the caller."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def verify_secret(header: str | None) -> None:
    """The X-Telegram-Bot-Api-Secret-Token header equals HITL_TELEGRAM_WEBHOOK_SECRET (constant time)."""
    secret = settings.HITL_TELEGRAM_WEBHOOK_SECRET
    if not secret:
        raise WebhookRefused(
            "telegram_not_configured",
            "This portal has no Telegram webhook secret (HITL_TELEGRAM_WEBHOOK_SECRET), so it accepts no updates.",
        )
    if not header:
        raise WebhookRefused(
            "secret_missing", "X-Telegram-Bot-Api-Secret-Token is required: Telegram sends the webhook's secret."
        )
    if not hmac.compare_digest(header.encode("utf-8", "surrogateescape"), secret.encode()):
        raise WebhookRefused("secret_invalid", "X-Telegram-Bot-Api-Secret-Token does not match this portal's secret.")


def set_webhook(*, url: str) -> None:
    """Register the portal's webhook with Telegram: button presses and messages only, with the secret."""
    if not settings.HITL_TELEGRAM_WEBHOOK_SECRET:
        raise TelegramError("HITL_TELEGRAM_WEBHOOK_SECRET is not set", permanent=True)
    call(
        "setWebhook",
        url=url,
        secret_token=settings.HITL_TELEGRAM_WEBHOOK_SECRET,
        allowed_updates=["message", "callback_query"],
        drop_pending_updates=False,
    )
