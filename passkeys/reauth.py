"""Proving it is still you before your passkeys change: a fresh password, or one of your passkeys.

A session cookie alone must never enrol or remove a passkey: a stolen one would enrol the thief's
authenticator, which then approves passkey-only requests. The proof travels with each change and
is spent by it — a registration challenge is issued only after it, a removal carries it — so there
is no "recently confirmed" state for a stolen cookie to ride on. Wrong passwords count toward
django-axes' lockout, as at the login page.
"""

import json
from datetime import datetime
from typing import Any

from django.contrib.auth import authenticate
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import transaction
from django.http import HttpRequest
from webauthn import generate_authentication_options, options_to_json
from webauthn.helpers.structs import UserVerificationRequirement

from . import relying_party
from .assertions import assertion_verify
from .ceremony import CEREMONY_TIMEOUT_MS, challenge_consume, challenge_issue, signed_challenge
from .exceptions import PasskeyInvalid, ReauthRequired
from .models import Purpose
from .services import descriptors

NOTHING_CHANGED = "nothing was changed; try again."


def reauth_options(*, user: AbstractBaseUser) -> dict:
    """navigator.credentials.get() options for confirming it is you with one of your passkeys."""
    allowed = descriptors(user)
    if not allowed:
        raise PasskeyInvalid("You have no passkey yet: confirm with your password instead.")
    options = generate_authentication_options(
        rp_id=relying_party.rp_id(),
        challenge=challenge_issue(user=user, purpose=Purpose.REAUTH),
        timeout=CEREMONY_TIMEOUT_MS,
        allow_credentials=allowed,
        user_verification=UserVerificationRequirement.REQUIRED,
    )
    return json.loads(options_to_json(options))


def reauth_check(*, request: HttpRequest, user: AbstractBaseUser, password: Any, assertion: Any, now: datetime) -> str:
    """How the person proved it is them ("password" or "passkey"); ReauthRequired (or PasskeyRefused) if not."""
    if isinstance(assertion, dict) and assertion:
        with transaction.atomic():  # committed before the check: a refused answer still burns its challenge
            challenge = challenge_consume(
                user=user,
                purpose=Purpose.REAUTH,
                challenge=signed_challenge(assertion, failed=NOTHING_CHANGED),
                now=now,
                failed=NOTHING_CHANGED,
            )
        assertion_verify(user=user, credential=assertion, challenge=challenge, now=now, failed=NOTHING_CHANGED)
        return "passkey"
    if isinstance(password, str) and password:
        confirmed = authenticate(request, username=user.get_username(), password=password)
        if confirmed is not None and confirmed.pk == user.pk:
            return "password"
        raise ReauthRequired(
            "That is not your password; nothing was changed. After several wrong tries you are locked out "
            "for a while, as at sign-in."
        )
    raise ReauthRequired()


def assertion_from(raw: Any) -> dict | None:
    """A form's hidden `assertion` field (the passkey's answer as JSON) as a dict; None when empty or garbled."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
