"""Appending to the audit log, and sealing what was appended into each workspace's hash chain.

Appending is a plain INSERT in the transaction of the change it records (the registration
carries it inside its own INSERT statement), so it takes no lock: engines registering at once
in one workspace do not queue behind each other's commits. Sealing gives the new records their
`seq`, `prev_hash` and `hash`, in order, under the workspace's head row: in batches, moments
later — every minute (audit.tasks), and before every export and verify.
"""

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from django.contrib.auth.base_user import AbstractBaseUser
from django.db import connection, transaction
from django.utils import timezone

from .chain import canonical, record_hash
from .models import GENESIS_HASH, AuditHead, AuditRecord

if TYPE_CHECKING:  # for the annotation only: the audit log sits below workspaces (docs/modules.md)
    from workspaces.models import ApiToken

SYSTEM = "system"
SEAL_BATCH = 5000


def actor_of(*, user: AbstractBaseUser | None = None, engine_key: "ApiToken | None" = None) -> str:
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


_RECORD = AuditRecord._meta.db_table
_COLUMNS = "workspace_id, at, actor, action, object, data"


def record_cte(name: str, rows: str) -> str:
    """A CTE `name` appending audit records inside a change's own statement (its rows: a VALUES or a
    SELECT of workspace_id, at, actor, action, object, data). The one SQL form of an append: the
    registration, the decision and the sweep carry their records in their statements this way, so
    recording costs them no round trip (bench/audit.py)."""
    return f"{name} AS (INSERT INTO {_RECORD} ({_COLUMNS}) {rows})"


# One record from APPEND_CTE's parameters (append_params), beside the change's own CTEs.
APPEND_CTE = record_cte("audit_record", "VALUES (%s, %s, %s, %s, %s, %s::jsonb)")


def append_params(entry: AuditEntry) -> list:
    """The parameters of APPEND_CTE, in order."""
    at = entry.at or timezone.now()
    return [entry.workspace_id, at, entry.actor, entry.action, entry.object, canonical(entry.data)]


def audit_append(
    *, workspace_id: int, actor: str, action: str, object: str, data: dict | None = None, at: datetime | None = None
) -> None:
    """Append one record; call it inside the transaction of the change it records."""
    audit_append_many(
        entries=[
            AuditEntry(workspace_id=workspace_id, actor=actor, action=action, object=object, data=data or {}, at=at)
        ]
    )


def audit_append_many(*, entries: list[AuditEntry]) -> None:
    """Append records in one INSERT; call it inside the transaction of the change they record."""
    if entries:
        now = timezone.now()
        AuditRecord.objects.bulk_create(
            AuditRecord(
                workspace_id=e.workspace_id,
                at=e.at or now,
                actor=e.actor,
                action=e.action,
                object=e.object,
                data=e.data,
            )
            for e in entries
        )


def audit_seal(*, workspace_id: int) -> int:
    """Chain the workspace's unsealed records, oldest append first; returns how many were sealed."""
    from .selectors import unsealed_records

    sealed = 0
    while True:
        with transaction.atomic():
            seq, prev = _lock_head(workspace_id)
            records = list(unsealed_records(workspace_id=workspace_id, limit=SEAL_BATCH))
            if not records:
                return sealed
            for record in records:
                seq += 1
                record.update(seq=seq, prev_hash=prev)
                record["hash"] = prev = record_hash(record)
            _write_seals(records)
            AuditHead.objects.filter(pk=workspace_id).update(seq=seq, hash=prev)
        sealed += len(records)
        if len(records) < SEAL_BATCH:
            return sealed


def audit_seal_all() -> int:
    """Seal every workspace's new records (the scheduled task)."""
    workspaces = AuditRecord.objects.filter(hash__isnull=True).values_list("workspace_id", flat=True).distinct()
    return sum(audit_seal(workspace_id=workspace_id) for workspace_id in sorted(set(workspaces)))


def _lock_head(workspace_id: int) -> tuple[int, str]:
    """The head's (seq, hash), its row locked until the transaction ends (created on first use)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {AuditHead._meta.db_table} AS h (workspace_id, seq, hash) VALUES (%s, 0, %s) "
            "ON CONFLICT (workspace_id) DO UPDATE SET seq = h.seq RETURNING h.seq, h.hash",
            [workspace_id, GENESIS_HASH],
        )
        return cursor.fetchone()


def _write_seals(records: list[dict]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {_RECORD} AS r SET seq = v.seq, prev_hash = v.prev_hash, hash = v.hash "
            "FROM unnest(%s::bigint[], %s::bigint[], %s::text[], %s::text[]) AS v(id, seq, prev_hash, hash) "
            "WHERE r.id = v.id",
            [
                [r["id"] for r in records],
                [r["seq"] for r in records],
                [r["prev_hash"] for r in records],
                [r["hash"] for r in records],
            ],
        )
