"""Reads: a person's passkeys."""

from django.contrib.auth.base_user import AbstractBaseUser
from django.db.models import QuerySet

from .exceptions import PasskeyNotFound
from .models import Passkey


def passkeys_of(user: AbstractBaseUser) -> QuerySet[Passkey]:
    return Passkey.objects.filter(user=user).order_by("created_at", "id")


def passkey_get(*, user: AbstractBaseUser, public_id: str) -> Passkey:
    passkey = passkeys_of(user).filter(public_id=public_id).first()
    if passkey is None:
        raise PasskeyNotFound(public_id)
    return passkey
