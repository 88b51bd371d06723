"""Checking a passkey assertion against the challenge it answers: one check for step-up and re-authentication.

The caller has consumed the challenge (passkeys.ceremony) and checked what it binds; this proves the
rest with py_webauthn — made at the portal's origin for its RP id, the user verified, signed by one of
this person's passkeys — and moves the passkey's sign count once (a cloned authenticator's would not).
"""

from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from webauthn import verify_authentication_response
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.exceptions import WebAuthnException

from . import relying_party
from .exceptions import PasskeyRefused
from .models import Passkey, PasskeyChallenge
from .selectors import passkeys_of


@dataclass(frozen=True)
class Asserted:
    passkey: Passkey
    user_verified: bool
    sign_count: int


def assertion_verify(
    *, user: AbstractBaseUser, credential: dict, challenge: PasskeyChallenge, now: datetime, failed: str
) -> Asserted:
    """Verify `credential` against `challenge`, or raise PasskeyRefused ending in `failed` (what was not done)."""
    passkey = _passkey(user=user, credential=credential, failed=failed)
    try:
        verified = verify_authentication_response(
            credential=credential,
            expected_challenge=base64url_to_bytes(challenge.challenge),
            expected_rp_id=relying_party.rp_id(),
            expected_origin=relying_party.origin(),
            credential_public_key=bytes(passkey.public_key),
            credential_current_sign_count=passkey.sign_count,
            require_user_verification=True,
        )
    except (WebAuthnException, KeyError, TypeError, ValueError) as refused:
        raise PasskeyRefused(f"The passkey check failed ({refused}); {failed}") from None
    with transaction.atomic():
        # The counter moves once per assertion: two answers racing on one count, only one passes.
        moved = Passkey.objects.filter(pk=passkey.pk, sign_count=passkey.sign_count).update(
            sign_count=verified.new_sign_count, last_used_at=now
        )
    if not moved:
        raise PasskeyRefused(f"This passkey was used again meanwhile; {failed} Try again.")
    return Asserted(passkey=passkey, user_verified=verified.user_verified, sign_count=verified.new_sign_count)


def _passkey(*, user: AbstractBaseUser, credential: dict, failed: str) -> Passkey:
    raw_id = credential.get("rawId") or credential.get("id")
    try:
        encoded = bytes_to_base64url(base64url_to_bytes(raw_id)) if isinstance(raw_id, str) else ""
    except ValueError:
        encoded = ""
    passkey = passkeys_of(user).filter(credential_id=encoded).first() if encoded else None
    if passkey is None:
        raise PasskeyRefused(f"That passkey is not one of yours registered here; {failed}")
    return passkey
