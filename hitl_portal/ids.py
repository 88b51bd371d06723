"""Public ids: a type prefix and random characters (`cfg_3kq9…`), never a database pk."""

import string
from typing import Any

from django.utils.crypto import get_random_string

_ALPHABET = string.ascii_lowercase + string.digits


def new_public_id(prefix: str) -> str:
    return f"{prefix}_{get_random_string(16, _ALPHABET)}"


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
