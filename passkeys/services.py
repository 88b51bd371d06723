"""Writes on a person's passkeys: register (two steps: options, then the authenticator's answer), rename, remove.

Registering and removing need proof that it is still the person (passkeys.reauth), say how it was
given in their audit records, and tell the person on every channel they set up. Each write is audited
in every workspace the person belongs to: a passkey approves in each of them.
"""

import hashlib
import hmac
import json
from typing import Any

from django.conf import settings
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone
from webauthn import generate_registration_options, options_to_json, verify_registration_response
from webauthn.helpers import base64url_to_bytes, bytes_to_base64url
from webauthn.helpers.exceptions import WebAuthnException
from webauthn.helpers.structs import (
    AuthenticatorSelectionCriteria,
    AuthenticatorTransport,
    PublicKeyCredentialDescriptor,
    ResidentKeyRequirement,
    UserVerificationRequirement,
)

from audit.services import AuditEntry, actor_of, audit_append_many
from workspaces.models import Membership

from . import relying_party
from .ceremony import CEREMONY_TIMEOUT_MS, challenge_consume, challenge_issue, signed_challenge
from .exceptions import PasskeyInvalid, ReauthRequired
from .models import Passkey, Purpose
from .selectors import passkeys_of
from .signals import passkey_changed

NAME_MAX = Passkey._meta.get_field("name").max_length
KNOWN_TRANSPORTS = {transport.value for transport in AuthenticatorTransport}


def _audit(*, user: AbstractBaseUser, action: str, passkey: Passkey, data: dict | None = None) -> None:
    workspaces = Membership.objects.filter(user=user).values_list("workspace_id", flat=True)
    entries = [
        AuditEntry(
            workspace_id=workspace_id,
            actor=actor_of(user=user),
            action=action,
            object=passkey.public_id,
            data={"name": passkey.name, "user": user.email, **(data or {})},
        )
        for workspace_id in workspaces
    ]
    audit_append_many(entries=entries)


def user_handle(user: AbstractBaseUser) -> bytes:
    """The WebAuthn user handle: stable for a person, and no personal data (a keyed hash of the pk)."""
    return hmac.new(settings.SECRET_KEY.encode(), f"passkey-user:{user.pk}".encode(), hashlib.sha256).digest()


def descriptors(user: AbstractBaseUser) -> list[PublicKeyCredentialDescriptor]:
    return [
        PublicKeyCredentialDescriptor(
            id=base64url_to_bytes(passkey.credential_id),
            transports=[AuthenticatorTransport(t) for t in passkey.transports if t in KNOWN_TRANSPORTS] or None,
        )
        for passkey in passkeys_of(user)
    ]


def _tell(*, user: AbstractBaseUser, change: str, name: str) -> None:
    transaction.on_commit(lambda: passkey_changed.send(sender=None, user_id=user.pk, change=change, name=name))


def passkey_registration_options(*, user: AbstractBaseUser, confirmed_with: str) -> dict:
    """The options for navigator.credentials.create(), with a fresh one-use challenge; `confirmed_with`: how the
    person proved it is them (passkeys.reauth.reauth_check), required."""
    if not confirmed_with:
        raise ReauthRequired()
    challenge = challenge_issue(user=user, purpose=Purpose.REGISTER, confirmed_with=confirmed_with)
    options = generate_registration_options(
        rp_id=relying_party.rp_id(),
        rp_name=relying_party.RP_NAME,
        user_id=user_handle(user),
        user_name=user.email or user.get_username(),
        challenge=challenge,
        timeout=CEREMONY_TIMEOUT_MS,
        authenticator_selection=AuthenticatorSelectionCriteria(
            resident_key=ResidentKeyRequirement.PREFERRED, user_verification=UserVerificationRequirement.REQUIRED
        ),
        exclude_credentials=descriptors(user),
    )
    return json.loads(options_to_json(options))


def _clean_name(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise PasskeyInvalid("Name the passkey (e.g. “Work laptop”) so you can tell it apart later.")
    name = name.strip()
    if len(name) > NAME_MAX:
        raise PasskeyInvalid(f"A passkey's name is at most {NAME_MAX} characters; this one has {len(name)}.")
    return name


def passkey_register(*, user: AbstractBaseUser, name: Any, credential: Any) -> Passkey:
    """Verify the authenticator's answer to our challenge (origin, RP id, user verification) and keep the key."""
    name = _clean_name(name)
    if not isinstance(credential, dict):
        raise PasskeyInvalid("credential must be what navigator.credentials.create() answered, as JSON.")
    now = timezone.now()
    signed = signed_challenge(credential, failed="nothing was registered.")
    with transaction.atomic():
        challenge = challenge_consume(
            user=user, purpose=Purpose.REGISTER, challenge=signed, now=now, failed="nothing was registered."
        )
    if not challenge.confirmed_with:
        raise ReauthRequired()
    try:
        verified = verify_registration_response(
            credential=credential,
            expected_challenge=base64url_to_bytes(challenge.challenge),
            expected_rp_id=relying_party.rp_id(),
            expected_origin=relying_party.origin(),
            require_user_verification=True,
        )
    except (WebAuthnException, KeyError, TypeError, ValueError) as refused:
        raise PasskeyInvalid(f"The passkey could not be verified ({refused}); nothing was registered.") from None
    transports = (credential.get("response") or {}).get("transports") or []
    try:
        with transaction.atomic():
            passkey = Passkey.objects.create(
                user=user,
                name=name,
                credential_id=bytes_to_base64url(verified.credential_id),
                public_key=verified.credential_public_key,
                sign_count=verified.sign_count,
                transports=[t for t in transports if isinstance(t, str) and t in KNOWN_TRANSPORTS],
                created_at=now,
            )
            _audit(
                user=user,
                action="passkey.registered",
                passkey=passkey,
                data={"confirmed_with": challenge.confirmed_with},
            )
            _tell(user=user, change="registered", name=passkey.name)
    except IntegrityError:
        raise PasskeyInvalid("This passkey is registered already.") from None
    return passkey


@transaction.atomic
def passkey_rename(*, passkey: Passkey, name: Any) -> Passkey:
    before = passkey.name
    passkey.name = _clean_name(name)
    passkey.save(update_fields=["name"])
    _audit(user=passkey.user, action="passkey.renamed", passkey=passkey, data={"was": before})
    return passkey


@transaction.atomic
def passkey_remove(*, passkey: Passkey, confirmed_with: str) -> None:
    """Remove the passkey; `confirmed_with`: how the person proved it is them, required."""
    if not confirmed_with:
        raise ReauthRequired()
    _audit(user=passkey.user, action="passkey.removed", passkey=passkey, data={"confirmed_with": confirmed_with})
    _tell(user=passkey.user, change="removed", name=passkey.name)
    passkey.delete()
