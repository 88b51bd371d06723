"""Linking a portal user to their Telegram user: a one-time code made on the account page, sent to the bot.

The code is shown once and stored as its SHA-256 (like API tokens); it works once, for ten minutes,
and only in a private chat with the bot, so nobody links someone else's Telegram account by
reading a code off a shared group.
"""

import hashlib
import secrets
from datetime import timedelta

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.services import actor_of, audit_append
from workspaces.models import Membership

from .models import TelegramAccount, TelegramLinkCode

CODE_TTL = timedelta(minutes=10)
# Unambiguous letters and digits (no 0/O, 1/I/L): the code may be typed from the account page.
ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
CODE_LENGTH = 10


def _digest(code: str) -> str:
    return hashlib.sha256(code.strip().upper().encode()).hexdigest()


def _audit(*, user: AbstractBaseUser, action: str, data: dict) -> None:
    """A link or unlink is recorded in each workspace the user belongs to: it changes who decides there."""
    for workspace_id in Membership.objects.filter(user=user).values_list("workspace_id", flat=True):
        audit_append(workspace_id=workspace_id, actor=actor_of(user=user), action=action, object=user.email, data=data)


@transaction.atomic
def telegram_link_code_create(*, user: AbstractBaseUser) -> str:
    """A new one-time code for `user` (any earlier one stops working); returned once, never stored."""
    code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
    TelegramLinkCode.objects.update_or_create(
        user=user, defaults={"digest": _digest(code), "expires_at": timezone.now() + CODE_TTL}
    )
    return code


class LinkRefused(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


@transaction.atomic
def telegram_account_link(*, code: str, telegram_user_id: int, telegram_username: str = "") -> AbstractBaseUser:
    """Link the Telegram user who sent `code` to the code's portal user; the code is used up."""
    now = timezone.now()
    found = (
        TelegramLinkCode.objects.select_for_update()
        .select_related("user")
        .filter(digest=_digest(code), expires_at__gt=now)
        .first()
    )
    if found is None or not found.user.is_active:
        raise LinkRefused(
            "That code is not one the HITL portal gave out, or it has expired (codes last 10 minutes). "
            "Make a new one on your account page."
        )
    user = found.user
    found.delete()
    TelegramAccount.objects.filter(user=user).delete()
    try:
        with transaction.atomic():
            TelegramAccount.objects.create(
                user=user, telegram_user_id=telegram_user_id, telegram_username=telegram_username[:64], linked_at=now
            )
    except IntegrityError:
        raise LinkRefused(
            "This Telegram account is already linked to another portal user: unlink it on their account page first."
        ) from None
    _audit(user=user, action="telegram.linked", data={"telegram_user_id": telegram_user_id})
    return user


@transaction.atomic
def telegram_account_unlink(*, user: AbstractBaseUser) -> bool:
    deleted, _ = TelegramAccount.objects.filter(user=user).delete()
    TelegramLinkCode.objects.filter(user=user).delete()
    if deleted:
        _audit(user=user, action="telegram.unlinked", data={})
    return bool(deleted)
