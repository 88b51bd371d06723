"""Who the portal is to an authenticator: its origin and RP id, both from HITL_BASE_URL.

A passkey is bound to the RP id (the host name) and every ceremony to the origin, so both come
from the portal's one public address, never from the request's Host header (which a client writes).
"""

from urllib.parse import urlsplit

from django.conf import settings

from .exceptions import PasskeyInvalid

RP_NAME = "HITL Portal"


def origin() -> str:
    parts = urlsplit(settings.HITL_BASE_URL)
    if not parts.scheme or not parts.hostname:
        raise PasskeyInvalid(
            "HITL_BASE_URL is not set: passkeys are bound to the portal's public address, so set it "
            "(e.g. https://hitl.example.com) and restart the portal."
        )
    return f"{parts.scheme}://{parts.netloc}"


def rp_id() -> str:
    origin()  # refuses an unset address with its message
    return urlsplit(settings.HITL_BASE_URL).hostname or ""
