"""The one-use challenges of both ceremonies (register, step-up): issued, then consumed once.

Consuming is a conditional UPDATE on (unused, not yet expired): of two requests carrying the
same assertion exactly one gets the challenge, the database deciding. A failed check still
burns it, so every retry starts a fresh ceremony.
"""

import secrets
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.utils import timezone
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url, parse_client_data_json
from webauthn.helpers.exceptions import WebAuthnException

from .exceptions import PasskeyRefused
from .models import PasskeyChallenge

# The browser's own timeout for each ceremony, and the challenge's life a little beyond it.
CEREMONY_TIMEOUT_MS = 120_000
CHALLENGE_TTL = timedelta(milliseconds=CEREMONY_TIMEOUT_MS) + timedelta(seconds=30)


def challenge_issue(
    *,
    user: AbstractBaseUser,
    purpose: str,
    suffix: bytes = b"",
    approval_public_id: str = "",
    call_digest: str = "",
    confirmed_with: str = "",
) -> bytes:
    """32 random bytes (and `suffix`, a binding), stored for `user` until CHALLENGE_TTL from now."""
    challenge = secrets.token_bytes(32) + suffix
    now = timezone.now()
    PasskeyChallenge.objects.filter(expires_at__lte=now - CHALLENGE_TTL).delete()  # the dead ones go as we pass
    PasskeyChallenge.objects.create(
        user=user,
        purpose=purpose,
        challenge=bytes_to_base64url(challenge),
        approval_public_id=approval_public_id,
        call_digest=call_digest,
        confirmed_with=confirmed_with,
        created_at=now,
        expires_at=now + CHALLENGE_TTL,
    )
    return challenge


STEP_UP_FAILED = "nothing was decided; press Approve again."


def signed_challenge(credential: dict[str, Any], *, failed: str = STEP_UP_FAILED) -> bytes:
    """The challenge the browser signed, read from the credential's clientDataJSON (not yet verified).

    `failed` ends each refusal: what was not done, for the ceremony at hand."""
    try:
        client_data = base64url_to_bytes(credential["response"]["clientDataJSON"])
        return parse_client_data_json(client_data).challenge
    except (KeyError, TypeError, ValueError, WebAuthnException):
        raise PasskeyRefused(f"The passkey's answer is not a WebAuthn credential; {failed}") from None


def challenge_consume(
    *, user: AbstractBaseUser, purpose: str, challenge: bytes, now: datetime, failed: str = STEP_UP_FAILED
) -> PasskeyChallenge:
    """The challenge, marked used by this call; PasskeyRefused when it is unknown, someone else's, used or expired."""
    encoded = bytes_to_base64url(challenge)
    won = PasskeyChallenge.objects.filter(
        user=user, purpose=purpose, challenge=encoded, used_at__isnull=True, expires_at__gt=now
    ).update(used_at=now)
    if not won:
        raise PasskeyRefused(
            "This passkey answer was already used, has expired, or was not asked of you here: "
            f"each one works once, within two minutes; {failed}"
        )
    return PasskeyChallenge.objects.get(user=user, challenge=encoded)
