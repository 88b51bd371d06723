"""The Slack Web API boundary: one client, one signature check, one error type.

Everything that talks to Slack goes through here, so tests point HITL_SLACK_API_URL at a fake
Web API on 127.0.0.1 and exercise the rest of the code unchanged.
"""

import hashlib
import re
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.signature import SignatureVerifier

from contacts.models import reference_name
from contacts.transports.base import TransportError, resolve, retry_seconds

from .models import SlackRequestSeen

# Slack's window for a request timestamp; the same window bounds how long a signature is remembered.
SIGNATURE_WINDOW = timedelta(minutes=5)
# Inside an interaction Slack waits 3 s for the answer: each call there gets at most this long.
INTERACTIVE_TIMEOUT_SECONDS = 1.2
BACKGROUND_TIMEOUT_SECONDS = 10

# Slack answers these for a channel or message that will never accept the call: retrying is useless.
PERMANENT_ERRORS = {
    "channel_not_found",
    "not_in_channel",
    "is_archived",
    "invalid_auth",
    "not_authed",
    "account_inactive",
    "token_revoked",
    "missing_scope",
    "message_not_found",
    "cant_update_message",
    "invalid_blocks",
    "msg_too_long",
}


class SlackError(TransportError):
    """A Slack call that failed. `permanent`: retrying will not help; `retry_after`: Slack's 429 wait, seconds;
    `code`: Slack's error code (`user_not_found`), when it gave one."""

    def __init__(self, message: str, *, permanent: bool = False, retry_after: int | None = None, code: str = ""):
        super().__init__(message, permanent=permanent, retry_after=retry_after)
        self.code = code


def client(*, timeout: float = BACKGROUND_TIMEOUT_SECONDS) -> WebClient:
    """A WebClient with the bot token. No SDK retries: the outbox owns retries and honours Retry-After."""
    if not settings.HITL_SLACK_BOT_TOKEN:
        raise SlackError("HITL_SLACK_BOT_TOKEN is not set", permanent=True)
    return WebClient(
        token=settings.HITL_SLACK_BOT_TOKEN,
        base_url=settings.HITL_SLACK_API_URL,
        timeout=timeout,
        retry_handlers=[],
    )


def call(method: str, *, timeout: float = BACKGROUND_TIMEOUT_SECONDS, **params) -> dict:
    """Call a Web API method ("chat.update") through the SDK's own method for it; Slack's answer as a dict.

    A failure raises SlackError naming the method and Slack's error code, never the token, the
    channel id or the message text.
    """
    try:
        response = getattr(client(timeout=timeout), method.replace(".", "_"))(**params)
        return response.data
    except SlackApiError as error:
        status = error.response.status_code
        code = error.response.get("error", "") if isinstance(error.response.data, dict) else ""
        if status == 429:
            headers = {key.lower(): value for key, value in (error.response.headers or {}).items()}
            wait = retry_seconds(headers.get("retry-after"))
            raise SlackError(
                f"Slack rate-limited {method} (HTTP 429, retry after {wait} s)", retry_after=wait
            ) from None
        if status >= 500:
            raise SlackError(f"HTTP {status} from Slack on {method}") from None
        raise SlackError(
            f"Slack refused {method}: {code or f'HTTP {status}'}", permanent=code in PERMANENT_ERRORS, code=code
        ) from None
    except SlackClientError as error:
        raise SlackError(f"Slack {method} failed: {type(error).__name__}") from None
    except OSError as error:  # connection refused, reset, timeout: worth another try
        raise SlackError(f"Slack {method} failed: {type(error).__name__}") from None


# --- Channel references ---------------------------------------------------------------------

CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,}$")


def channel_for(channel_ref: str) -> str:
    """The Slack channel id a contact's `${HITL_…}` reference names, resolved now, never stored."""
    value = resolve(channel_ref)
    if not CHANNEL_ID.match(value):
        # The value stays out of the message: it may be something that was never meant to be shown.
        raise SlackError(
            f"{reference_name(channel_ref)} does not hold a Slack channel id (C…, G… or D…)", permanent=True
        )
    return value


# --- Incoming requests ----------------------------------------------------------------------


class SignatureRefused(Exception):
    """Why an incoming request is not Slack's: the message is safe to show the caller."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def verify_request(*, body: bytes, timestamp: str | None, signature: str | None) -> None:
    """Slack signed this body within the last 5 minutes, and we have not seen this signature before.

    Replays are refused by the database: a signature is inserted once (unique), and a second
    INSERT of the same one — a replay inside the 5-minute window — fails, also when two race.
    """
    secret = settings.HITL_SLACK_SIGNING_SECRET
    if not secret:
        raise SignatureRefused(
            "slack_not_configured",
            "This portal has no Slack signing secret (HITL_SLACK_SIGNING_SECRET), so it accepts no Slack requests.",
        )
    if not timestamp or not signature:
        raise SignatureRefused(
            "signature_missing", "X-Slack-Request-Timestamp and X-Slack-Signature are required: Slack signs its calls."
        )
    try:
        moment = int(timestamp)
    except ValueError:
        raise SignatureRefused("signature_invalid", "X-Slack-Request-Timestamp must be Unix seconds.") from None
    now = timezone.now().timestamp()
    if abs(now - moment) > SIGNATURE_WINDOW.total_seconds():
        raise SignatureRefused("signature_stale", "The request timestamp is more than 5 minutes away from now.")
    try:
        valid = SignatureVerifier(secret).is_valid(body=body, timestamp=timestamp, signature=signature)
    except (UnicodeDecodeError, ValueError):
        valid = False
    if not valid:
        raise SignatureRefused("signature_invalid", "The Slack signature does not match this body.")
    _remember(signature)


def _remember(signature: str) -> None:
    digest = hashlib.sha256(signature.encode()).hexdigest()
    now = timezone.now()
    try:
        with transaction.atomic():
            SlackRequestSeen.objects.create(digest=digest, received_at=now)
    except IntegrityError:
        raise SignatureRefused("signature_replayed", "This signed request was already received once.") from None
    # Older signatures are outside the window and would be refused as stale anyway.
    SlackRequestSeen.objects.filter(received_at__lt=now - 2 * SIGNATURE_WINDOW).delete()


# --- Who is clicking ------------------------------------------------------------------------


@dataclass(frozen=True)
class SlackIdentity:
    email: str  # empty when Slack shows this app no email for the user


def identity_of(slack_user_id: str) -> SlackIdentity:
    """The email Slack reports for a user (users.info, scope users:read.email)."""
    try:
        data = call("users.info", timeout=INTERACTIVE_TIMEOUT_SECONDS, user=slack_user_id)
    except SlackError as error:
        if error.code in ("user_not_found", "users_not_found"):
            return SlackIdentity(email="")
        raise
    user = data.get("user") or {}
    if user.get("deleted") or user.get("is_bot"):
        return SlackIdentity(email="")
    return SlackIdentity(email=((user.get("profile") or {}).get("email") or "").strip())
