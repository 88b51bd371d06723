"""Appending to the audit log, in the same transaction as the change it records.

On PostgreSQL one statement locks the workspace's head row, numbers the record, hashes it and
inserts it: sha256() finishes the canonical text that Python began (chain.hashed_prefix), so an
append costs one round trip and can ride inside the change's own statement (the registration
INSERT does, services.approval_register). Batches (the sweep) and SQLite chain in Python with the
same chain.py that `hitl audit verify` checks them with.
"""

from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .chain import canonical, format_at, hashed_prefix, record_hash
from .models import GENESIS_HASH, AuditHead, AuditRecord

SYSTEM = "system"


def actor_of(*, user=None, engine_key=None) -> str:
    """Who did it, as the log names them: an email, `engine:<name>`, or `system`."""
    if engine_key is not None:
        return f"engine:{engine_key.name}"
    email = getattr(user, "email", "") if getattr(user, "is_authenticated", False) else ""
    return email or SYSTEM


@dataclass(frozen=True)
class AuditEntry:
    workspace_id: int
    actor: str
    action: str
    object: str
    data: dict = field(default_factory=dict)
    at: datetime | None = None


def audit_enabled() -> bool:
    # Only the benchmark turns the log off, to measure what it costs (bench/audit.py).
    return getattr(settings, "AUDIT_LOG", True)


_HEAD = AuditHead._meta.db_table
_RECORD = AuditRecord._meta.db_table
_HASH = "encode(sha256(convert_to({prev} || %s || {prev} || '\",\"seq\":' || ({seq}) || '}}', 'UTF8')), 'hex')"

# Two CTEs, `audit_head` and `audit_record`, to put after WITH (alone or beside the change's own).
# ON CONFLICT creates the head on a workspace's first record; otherwise it locks the head row
# until the transaction ends, which is what keeps seq gapless and the chain linear.
APPEND_CTES = f"""
audit_head AS (
    INSERT INTO {_HEAD} AS h (workspace_id, seq, prev_hash, hash)
    VALUES (%s, 1, '{GENESIS_HASH}', {_HASH.format(prev=f"'{GENESIS_HASH}'", seq="1")})
    ON CONFLICT (workspace_id) DO UPDATE SET
        seq = h.seq + 1, prev_hash = h.hash, hash = {_HASH.format(prev="h.hash", seq="h.seq + 1")}
    RETURNING h.seq, h.prev_hash, h.hash
), audit_record AS (
    INSERT INTO {_RECORD} (workspace_id, seq, at, actor, action, object, data, prev_hash, hash)
    SELECT %s, seq, %s, %s, %s, %s, %s::jsonb, prev_hash, hash FROM audit_head
)"""


def append_params(entry: AuditEntry) -> list:
    """The parameters of APPEND_CTES, in order."""
    at = entry.at or timezone.now()
    prefix = hashed_prefix(at=at, actor=entry.actor, action=entry.action, object=entry.object, data=entry.data)
    return [
        entry.workspace_id,
        prefix,  # the first record's hash
        prefix,  # a later record's hash
        entry.workspace_id,
        at,
        entry.actor,
        entry.action,
        entry.object,
        canonical(entry.data),
    ]


def audit_append(
    *, workspace_id: int, actor: str, action: str, object: str, data: dict | None = None, at: datetime | None = None
) -> None:
    """Append one record; call it inside the transaction of the change it records."""
    if not audit_enabled():
        return
    entry = AuditEntry(workspace_id=workspace_id, actor=actor, action=action, object=object, data=data or {}, at=at)
    if connection.vendor != "postgresql":
        audit_append_many(entries=[entry])
        return
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {APPEND_CTES} SELECT 1", append_params(entry))


def audit_append_many(*, entries: list[AuditEntry]) -> None:
    """Append several records (a sweep's batch), chained in Python: one lock and one INSERT per workspace."""
    if not entries or not audit_enabled():
        return
    with transaction.atomic():
        by_workspace: dict[int, list[AuditEntry]] = {}
        for entry in entries:
            by_workspace.setdefault(entry.workspace_id, []).append(entry)
        for workspace_id in sorted(by_workspace):  # one lock order, so two sweeps never deadlock
            seq, prev = _lock_head(workspace_id)
            rows = []
            for entry in by_workspace[workspace_id]:
                seq += 1
                at = entry.at or timezone.now()
                record = {
                    "seq": seq,
                    "at": at,
                    "actor": entry.actor,
                    "action": entry.action,
                    "object": entry.object,
                    "data": entry.data,
                    "prev_hash": prev,
                }
                record["hash"] = record_hash({**record, "at": format_at(at)})
                rows.append(AuditRecord(workspace_id=workspace_id, **record))
                prev_of_last, prev = prev, record["hash"]
            AuditRecord.objects.bulk_create(rows)
            AuditHead.objects.filter(pk=workspace_id).update(seq=seq, hash=prev, prev_hash=prev_of_last)


def _lock_head(workspace_id: int) -> tuple[int, str]:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {_HEAD} AS h (workspace_id, seq, prev_hash, hash) VALUES (%s, 0, %s, %s) "
                "ON CONFLICT (workspace_id) DO UPDATE SET seq = h.seq RETURNING h.seq, h.hash",
                [workspace_id, GENESIS_HASH, GENESIS_HASH],
            )
            return cursor.fetchone()
    head, _ = AuditHead.objects.select_for_update().get_or_create(workspace_id=workspace_id)
    return head.seq, head.hash
