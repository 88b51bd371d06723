"""The receipt keys: the one signing key (HITL_RECEIPT_KEY), the previous public keys, the JWKS.

A key's `kid` is its RFC 7638 JWK thumbprint, so it needs no configuration of its own and the same
key has the same id in every process, in the JWKS and in every receipt (docs/receipts.md).
Loaded once per process; `receipt_keys_reset` is for the tests that change the settings (a signed
receipt is cached by kid, so a new key never answers with an old key's receipt).
"""

import base64
import hashlib
import json
import re
from dataclasses import dataclass
from functools import cache

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from jwt.algorithms import OKPAlgorithm

_PEM_BLOCK = re.compile(r"-----BEGIN [A-Z ]+-----.+?-----END [A-Z ]+-----", re.DOTALL)
MISSING = (
    "HITL_RECEIPT_KEY is not set, and DEBUG is off: every decided request carries a receipt signed with it. "
    "Make one with `python manage.py hitl receipt-key new` and set HITL_RECEIPT_KEY to the PEM it prints "
    "(docs/receipts.md)."
)


@dataclass(frozen=True)
class ReceiptKeys:
    signing: Ed25519PrivateKey
    kid: str
    # Every key a receipt may be checked against, current first: kid → public key.
    public: dict[str, Ed25519PublicKey]


def _pem_text(value: str) -> str:
    # An environment file often holds a PEM on one line with literal \n.
    return value.replace("\\n", "\n").strip()


def private_key_from_pem(text: str, *, name: str = "HITL_RECEIPT_KEY") -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(_pem_text(text).encode(), password=None)
    except (ValueError, TypeError) as error:
        raise ImproperlyConfigured(
            f"{name} is not a PEM private key without a password ({error}). Make one with "
            "`python manage.py hitl receipt-key new` (docs/receipts.md)."
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ImproperlyConfigured(
            f"{name} is a {type(key).__name__.lstrip('_')}, not an Ed25519 key: receipts are signed with EdDSA "
            "(Ed25519). Make one with `python manage.py hitl receipt-key new` (docs/receipts.md)."
        )
    return key


def public_keys_from_pem(text: str, *, name: str = "HITL_RECEIPT_PREVIOUS_KEYS") -> list[Ed25519PublicKey]:
    """One or more PEM blocks: public keys, or private ones (only their public half is kept)."""
    keys = []
    for block in _PEM_BLOCK.findall(_pem_text(text)):
        if "PRIVATE" in block:
            keys.append(private_key_from_pem(block, name=name).public_key())
            continue
        try:
            key = serialization.load_pem_public_key(block.encode())
        except ValueError as error:
            raise ImproperlyConfigured(f"{name} holds a block that is not a PEM public key ({error}).") from None
        if not isinstance(key, Ed25519PublicKey):
            raise ImproperlyConfigured(f"{name} holds a {type(key).__name__.lstrip('_')}, not an Ed25519 key.")
        keys.append(key)
    if text.strip() and not keys:
        raise ImproperlyConfigured(f"{name} holds no PEM block (-----BEGIN PUBLIC KEY----- …).")
    return keys


def jwk_of(key: Ed25519PublicKey) -> dict:
    """The public JWK (RFC 8037 OKP) with its kid and use, as /.well-known/jwks.json lists it."""
    jwk = OKPAlgorithm.to_jwk(key, as_dict=True)
    return {**jwk, "kid": kid_of(key), "alg": "EdDSA", "use": "sig"}


def kid_of(key: Ed25519PublicKey) -> str:
    """RFC 7638 thumbprint: SHA-256 of the required members, sorted, no whitespace; base64url."""
    raw = key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    x = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    members = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": x}, sort_keys=True, separators=(",", ":"))
    return base64.urlsafe_b64encode(hashlib.sha256(members.encode()).digest()).rstrip(b"=").decode()


def _development_key() -> Ed25519PrivateKey:
    # DEBUG only: every process of one portal derives the same key, so receipts verify whichever signed.
    return Ed25519PrivateKey.from_private_bytes(
        hashlib.sha256(b"hitl-receipt:" + settings.SECRET_KEY.encode()).digest()
    )


@cache
def receipt_keys() -> ReceiptKeys:
    if settings.HITL_RECEIPT_KEY:
        signing = private_key_from_pem(settings.HITL_RECEIPT_KEY)
    elif settings.DEBUG:
        signing = _development_key()
    else:
        raise ImproperlyConfigured(MISSING)
    current = signing.public_key()
    public = {kid_of(current): current}
    for key in public_keys_from_pem(settings.HITL_RECEIPT_PREVIOUS_KEYS):
        public.setdefault(kid_of(key), key)
    return ReceiptKeys(signing=signing, kid=kid_of(current), public=public)


def receipt_keys_reset() -> None:
    receipt_keys.cache_clear()


def jwks() -> dict:
    return {"keys": [jwk_of(key) for key in receipt_keys().public.values()]}


def require_receipt_key() -> None:
    """At startup (web server, cluster, `check`): refuse a missing or malformed key with a message."""
    receipt_keys()


def new_private_pem() -> str:
    key = Ed25519PrivateKey.generate()
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def public_pem(key: Ed25519PublicKey) -> str:
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
