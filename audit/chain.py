"""What is hashed, written once for sealing (audit/services.py) and for `hitl audit verify`.

A record as exported is `{seq, at, actor, action, object, data, prev_hash, hash}`. Its `hash`
is the hex SHA-256 of the UTF-8 bytes of `prev_hash + canonical(record without hash)`, where
canonical is `json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False)` and
`at` is the string `YYYY-MM-DDTHH:MM:SS.ffffffZ` (UTC, always six digits of microseconds).
The first record's `prev_hash` is 64 zeros. Anyone holding the export can recompute it.
"""

import hashlib
import json
from collections.abc import Iterable
from datetime import UTC, datetime

from .models import GENESIS_HASH

HASHED_FIELDS = ("seq", "at", "actor", "action", "object", "data", "prev_hash")


# One encoder, built once: json.dumps builds a new one per call for these options.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(value: object) -> str:
    return _CANONICAL.encode(value)


def format_at(at: datetime) -> str:
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def record_hash(record: dict) -> str:
    """The hash of an exported record (its `hash` key, if present, is ignored)."""
    body = {field: record[field] for field in HASHED_FIELDS}
    return hashlib.sha256((record["prev_hash"] + canonical(body)).encode("utf-8")).hexdigest()


def first_broken(records: Iterable[dict]) -> int | None:
    """The seq of the first record that does not chain (wrong number, link or hash), or None."""
    expected_prev, expected_seq = GENESIS_HASH, 1
    for record in records:
        if (
            record["seq"] != expected_seq
            or record["prev_hash"] != expected_prev
            or record_hash(record) != record["hash"]
        ):
            return expected_seq  # a gap names the missing seq
        expected_prev, expected_seq = record["hash"], expected_seq + 1
    return None
