"""Public ids: a type prefix and random characters (`cfg_3kq9…`), never a database pk."""

import secrets
import string
from typing import Any

_ALPHABET = string.ascii_lowercase + string.digits
_LENGTH = 16
_IDS = len(_ALPHABET) ** _LENGTH  # ≈ 2^82.7 ids a prefix


def new_public_id(prefix: str) -> str:
    """`<prefix>_` and 16 characters from [a-z0-9], all 36^16 equally likely, from the OS's randomness.

    One draw for the whole id, written in base 36: get_random_string asks the OS once a character,
    ≈40 µs an id on the registration's path (two for a notified one) against ≈3 µs.
    """
    number = secrets.randbelow(_IDS)
    characters = []
    for _ in range(_LENGTH):
        number, digit = divmod(number, len(_ALPHABET))
        characters.append(_ALPHABET[digit])
    return f"{prefix}_{''.join(characters)}"


class PublicIdMixin:
    """For a model with a `public_id` field: its first save gives it `<public_id_prefix>_…`.

    Rows written without save() (bulk_create, a hand-written INSERT) call `ensure_public_id` first.
    """

    public_id_prefix: str

    def ensure_public_id(self) -> None:
        if not self.public_id:
            self.public_id = new_public_id(self.public_id_prefix)

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.ensure_public_id()
        super().save(*args, **kwargs)
