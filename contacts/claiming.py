"""The notification outbox, claiming: which due rows a worker takes next, fairly.

One statement (`_CLAIM_SQL`) takes due rows for a worker with FOR UPDATE SKIP LOCKED, moving each a
lease ahead and counting an attempt, so several workers split the rows instead of queueing on each
other, and a row whose worker died comes due again by itself. Fair by construction:

- per (workspace, channel): the groups that have pending rows are found by a skip scan of
  `dlv_due_fair` (one index probe per group, however many rows each holds), and the groups with the
  fewest rows waiting go first — a backlog of ten thousand in one workspace never queues another
  workspace's single notification behind it;
- per contact: at most PER_CONTACT rows of one contact a claim, so one contact's burst shares the
  batch with everyone else's;
- `busy`: the contacts and (workspace, channel) groups this worker already has enough sends in flight
  for are left for a later claim (contacts.sending), so a slow endpoint holds at most its own rows.

Waiting is counted up to COUNT_CAP rows a group, so a claim's cost does not grow with the backlog.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from .models import Delivery, DeliveryEvent, DeliveryStatus
from .outbox import followups_write

CLAIM_BATCH = 50
PER_CONTACT = 2  # rows of one contact in one claim
COUNT_CAP = 1000  # a group's waiting rows are counted up to this many: enough to order the groups

_TABLE = Delivery._meta.db_table
_CLAIM_SQL = f"""
WITH RECURSIVE grp AS (
    (SELECT workspace_id, channel FROM {_TABLE} WHERE status = %(pending)s ORDER BY workspace_id, channel LIMIT 1)
    UNION ALL
    SELECT nxt.workspace_id, nxt.channel FROM grp CROSS JOIN LATERAL (
        SELECT d.workspace_id, d.channel FROM {_TABLE} d
        WHERE d.status = %(pending)s AND (d.workspace_id, d.channel) > (grp.workspace_id, grp.channel)
        ORDER BY d.workspace_id, d.channel LIMIT 1
    ) nxt
),
ranked AS (
    SELECT r.id, w.waiting, r.next_attempt_at,
           row_number() OVER (PARTITION BY r.contact_public_id ORDER BY r.next_attempt_at, r.id) AS nth
    FROM grp
    CROSS JOIN LATERAL (
        SELECT count(*) AS waiting FROM (
            SELECT 1 FROM {_TABLE} d
            WHERE d.status = %(pending)s AND d.workspace_id = grp.workspace_id AND d.channel = grp.channel
              AND d.next_attempt_at <= %(now)s
            LIMIT {COUNT_CAP}
        ) counted
    ) w
    CROSS JOIN LATERAL (
        SELECT d.id, d.contact_public_id, d.next_attempt_at FROM {_TABLE} d
        WHERE d.status = %(pending)s AND d.workspace_id = grp.workspace_id AND d.channel = grp.channel
          AND d.next_attempt_at <= %(now)s AND d.contact_public_id <> ALL(%(busy_contacts)s::varchar[])
        ORDER BY d.next_attempt_at, d.id
        LIMIT %(limit)s
    ) r
    WHERE w.waiting > 0 AND grp.workspace_id::text || ':' || grp.channel <> ALL(%(busy_channels)s::text[])
),
chosen AS (
    SELECT id FROM ranked WHERE nth <= {PER_CONTACT} ORDER BY waiting, next_attempt_at, id LIMIT %(limit)s
),
locked AS (
    SELECT d.id FROM {_TABLE} d JOIN chosen ON chosen.id = d.id
    WHERE d.status = %(pending)s AND d.next_attempt_at <= %(now)s
    FOR UPDATE OF d SKIP LOCKED
)
UPDATE {_TABLE} d SET next_attempt_at = %(lease)s, attempts = d.attempts + 1
FROM locked WHERE d.id = locked.id
RETURNING d.id
"""


def deliveries_claim(
    *,
    limit: int = CLAIM_BATCH,
    now: datetime | None = None,
    busy_contacts: Iterable[str] = (),
    busy_channels: Iterable[tuple[int, str]] = (),
) -> list[Delivery]:
    """Take up to `limit` due rows for this worker, fairly (see the module): each moves a lease ahead
    and counts an attempt. A `requested` row claimed for the first time schedules its request's
    follow-ups in the same transaction, so a claim that commits has written them and one that does not
    will be made again."""
    now = now or timezone.now()
    lease = now + timedelta(seconds=settings.HITL_DELIVERY_LEASE_SECONDS)
    params = {
        "pending": DeliveryStatus.PENDING,
        "now": now,
        "lease": lease,
        "limit": limit,
        "busy_contacts": list(busy_contacts),
        "busy_channels": [f"{workspace_id}:{channel}" for workspace_id, channel in busy_channels],
    }
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(_CLAIM_SQL, params)
            ids = [row[0] for row in cursor.fetchall()]
        if not ids:
            return []
        claimed = list(
            Delivery.objects.filter(pk__in=ids).select_related("approval__config", "workspace").order_by("pk")
        )
        followups_write(
            [d.approval for d in claimed if d.event == DeliveryEvent.REQUESTED and d.attempts == 1], now=now
        )
    return claimed
