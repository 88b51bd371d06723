"""The portal's VAPID identity (RFC 8292): the key pair push services know our messages by.

One key pair for the whole portal, from the environment: `HITL_VAPID_PRIVATE_KEY` (the P-256
private key, base64url of its 32 bytes as `hitl vapid-keys new` prints it, or a PEM) and
`HITL_VAPID_SUBJECT` (a `mailto:` or `https:` contact push services may write to). The public key
browsers subscribe with is worked out from the private one, so the two can never disagree; a
`HITL_VAPID_PUBLIC_KEY` that is set must be that same key, or nothing is sent (a half-changed pair). Changing the key
pair orphans every subscription: browsers subscribed with the old public key must subscribe again.
"""

import base64
import functools
import os
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from django.conf import settings


class VapidError(Exception):
    """The key in the environment is unusable; the message names the variable, never the key."""


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def keys_new() -> tuple[str, str]:
    """A new key pair: (private, public), base64url as the environment and browsers take them."""
    key = ec.generate_private_key(ec.SECP256R1())
    return b64url(key.private_numbers().private_value.to_bytes(32, "big")), _public_of(key)


def _public_of(key: ec.EllipticCurvePrivateKey) -> str:
    """The uncompressed point (65 bytes), base64url: PushManager.subscribe's applicationServerKey."""
    point = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return b64url(point)


NOT_A_KEY = "HITL_VAPID_PRIVATE_KEY is not a P-256 private key: make one with `hitl vapid-keys new`"


@functools.cache
def _load(raw: str) -> ec.EllipticCurvePrivateKey:
    try:
        if raw.startswith("-----BEGIN"):
            key = serialization.load_pem_private_key(raw.encode(), password=None)
        else:
            key = ec.derive_private_key(int.from_bytes(b64url_decode(raw), "big"), ec.SECP256R1())
    except Exception:
        raise VapidError(NOT_A_KEY) from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise VapidError(NOT_A_KEY)
    return key


def private_key() -> ec.EllipticCurvePrivateKey:
    raw = os.environ.get("HITL_VAPID_PRIVATE_KEY", "").strip()
    if not raw:
        raise VapidError("HITL_VAPID_PRIVATE_KEY is not set: make a key pair with `hitl vapid-keys new`")
    key = _load(raw.replace("\\n", "\n"))
    stated = os.environ.get("HITL_VAPID_PUBLIC_KEY", "").strip()
    if stated and stated.rstrip("=") != _public_of(key):
        raise VapidError(
            "HITL_VAPID_PUBLIC_KEY is not the public key of HITL_VAPID_PRIVATE_KEY: set both from one pair"
        )
    return key


def public_key() -> str | None:
    """The application server key the account page subscribes with, or None while push is not set up."""
    try:
        return _public_of(private_key())
    except VapidError:
        return None


def subject() -> str:
    """Who push services may write to about our messages: HITL_VAPID_SUBJECT (a `mailto:` or `https:`
    URL), else a mailto: at the portal's host — set it: Apple's push service refuses a localhost one."""
    given = os.environ.get("HITL_VAPID_SUBJECT", "").strip()
    return given or f"mailto:hitl-portal@{urlsplit(settings.HITL_BASE_URL).hostname or 'localhost'}"
