"""Public ids: a type prefix and random characters (`cfg_3kq9…`), never a database pk."""

import secrets
import string

_ALPHABET = string.ascii_lowercase + string.digits


def new_public_id(prefix: str) -> str:
    return prefix + "_" + "".join(secrets.choice(_ALPHABET) for _ in range(16))
