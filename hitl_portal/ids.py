"""Public ids: a type prefix and random characters (`cfg_3kq9…`), never a database pk."""

import string

from django.utils.crypto import get_random_string

_ALPHABET = string.ascii_lowercase + string.digits


def new_public_id(prefix: str) -> str:
    return f"{prefix}_{get_random_string(16, _ALPHABET)}"
