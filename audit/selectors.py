"""Reading the audit log: oldest first, in chunks from a server-side cursor (constant memory)."""

import json
from collections.abc import Iterator
from datetime import datetime

from django.db import connection

from .chain import format_at
from .models import AuditRecord

FIELDS = ("seq", "at", "actor", "action", "object", "data", "prev_hash", "hash")
CHUNK = 2000

# PostgreSQL formats `at` exactly as chain.format_at does and hands `data` over as text: through
# the ORM's per-row converters, `hitl audit verify` spent more time converting than hashing.
_SELECT = f"""
SELECT seq, to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'), actor, action, object, data::text,
       prev_hash, hash
FROM {AuditRecord._meta.db_table} WHERE workspace_id = %s {{filters}} ORDER BY seq
"""


def audit_records(*, workspace_id: int, since: datetime | None = None, until: datetime | None = None) -> Iterator[dict]:
    """The workspace's records as exported (and hashed): `at` as chain.format_at writes it."""
    if connection.vendor != "postgresql":
        yield from _records_orm(workspace_id=workspace_id, since=since, until=until)
        return
    filters, params = "", [workspace_id]
    if since is not None:
        filters, params = filters + " AND at >= %s", [*params, since]
    if until is not None:
        filters, params = filters + " AND at < %s", [*params, until]
    loads = json.loads
    with connection.chunked_cursor() as cursor:  # a named (server-side) cursor
        cursor.execute(_SELECT.format(filters=filters), params)
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


def _records_orm(*, workspace_id: int, since: datetime | None, until: datetime | None) -> Iterator[dict]:
    rows = AuditRecord.objects.filter(workspace_id=workspace_id).order_by("seq")
    if since is not None:
        rows = rows.filter(at__gte=since)
    if until is not None:
        rows = rows.filter(at__lt=until)
    for values in rows.values_list(*FIELDS).iterator(chunk_size=CHUNK):
        record = dict(zip(FIELDS, values, strict=True))
        record["at"] = format_at(record["at"])
        yield record
