"""Reading the audit log: oldest first, in chunks from a server-side cursor (constant memory)."""

from collections.abc import Iterator
from datetime import datetime

from .chain import format_at
from .models import AuditRecord

FIELDS = ("seq", "at", "actor", "action", "object", "data", "prev_hash", "hash")
CHUNK = 2000


def audit_records(*, workspace_id: int, since: datetime | None = None, until: datetime | None = None) -> Iterator[dict]:
    """The workspace's records as exported (and hashed): `at` as chain.format_at writes it."""
    rows = AuditRecord.objects.filter(workspace_id=workspace_id).order_by("seq")
    if since is not None:
        rows = rows.filter(at__gte=since)
    if until is not None:
        rows = rows.filter(at__lt=until)
    # .iterator() streams through a server-side cursor on PostgreSQL, CHUNK rows at a time.
    for values in rows.values_list(*FIELDS).iterator(chunk_size=CHUNK):
        record = dict(zip(FIELDS, values, strict=True))
        record["at"] = format_at(record["at"])
        yield record
