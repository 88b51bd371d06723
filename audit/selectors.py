"""Reading the audit log: oldest first, in chunks from a server-side cursor (constant memory)."""

import json
from collections.abc import Iterator
from datetime import datetime

from django.db import connection

from .models import GENESIS_HASH, AuditHead, AuditRecord

FIELDS = ("seq", "at", "actor", "action", "object", "data", "prev_hash", "hash")
CHUNK = 2000

# PostgreSQL formats `at` exactly as chain.format_at does and hands `data` over as text: through
# the ORM's per-row converters, `hitl audit verify` spent more time converting than hashing.
_AT = """to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')"""
_SEALED = f"""
SELECT seq, {_AT}, actor, action, object, data::text, prev_hash, hash
FROM {AuditRecord._meta.db_table} WHERE workspace_id = %s AND hash IS NOT NULL {{filters}} ORDER BY seq
"""
_UNSEALED = f"""
SELECT id, {_AT}, actor, action, object, data::text
FROM {AuditRecord._meta.db_table} WHERE workspace_id = %s AND hash IS NULL ORDER BY id LIMIT %s
"""


def audit_head(*, workspace_id: int) -> tuple[int, str]:
    """The end of the workspace's sealed chain, (seq, hash): the anchor to note down (audit page,
    export headers) and hand to `hitl audit verify --anchor` later."""
    head = AuditHead.objects.filter(pk=workspace_id).values_list("seq", "hash").first()
    return head or (0, GENESIS_HASH)


def audit_records(*, workspace_id: int, since: datetime | None = None, until: datetime | None = None) -> Iterator[dict]:
    """The workspace's sealed records as exported (and hashed): `at` as chain.format_at writes it."""
    filters, params = "", [workspace_id]
    if since is not None:
        filters, params = filters + " AND at >= %s", [*params, since]
    if until is not None:
        filters, params = filters + " AND at < %s", [*params, until]
    loads = json.loads
    with connection.chunked_cursor() as cursor:  # a named (server-side) cursor
        cursor.execute(_SEALED.format(filters=filters), params)
        while rows := cursor.fetchmany(CHUNK):
            for seq, at, actor, action, object_id, data, prev_hash, hash_ in rows:
                yield {
                    "seq": seq,
                    "at": at,
                    "actor": actor,
                    "action": action,
                    "object": object_id,
                    "data": loads(data),
                    "prev_hash": prev_hash,
                    "hash": hash_,
                }


def unsealed_records(*, workspace_id: int, limit: int) -> Iterator[dict]:
    """Records not yet in the chain, in the order they were appended (with their `id`, for sealing)."""
    with connection.cursor() as cursor:
        cursor.execute(_UNSEALED, [workspace_id, limit])
        for record_id, at, actor, action, object_id, data in cursor.fetchall():
            yield {
                "id": record_id,
                "at": at,
                "actor": actor,
                "action": action,
                "object": object_id,
                "data": json.loads(data),
            }
