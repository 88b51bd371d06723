"""The fatigue rule: a person told of more than FATIGUE_LIMIT requests in a minute gets the rest as one digest.

The first FATIGUE_LIMIT `requested` rows of a minute for one contact go out one by one; the rest of
that minute wait for its end and go out as one digest, sent by the digest's leader — the row right
after the limit — with every row of it. What a row is follows from how many came before it for its
contact in its minute, counted only up to FATIGUE_LIMIT + 1 (an index range that stops there): the
cost per row stays the same however large a burst grows. Followers are due a little after the
leader, so they normally go out with its digest and are never read one by one; one whose leader did
not send it (the leader's request decided meanwhile) leads its own digest then.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import F, QuerySet

from .models import Channel, Delivery, DeliveryEvent, DeliveryStatus

# Channels that reach people: the fatigue rule applies to them; machines get every event.
PEOPLE_CHANNELS = (Channel.EMAIL, Channel.SLACK, Channel.PUSH, Channel.TELEGRAM)
FATIGUE_LIMIT = 5  # more requests than this for one contact within a minute → the rest as one digest
FOLLOWER_GRACE = timedelta(seconds=15)  # followers come due this long after their digest's leader

_TABLE = Delivery._meta.db_table
# For each row, how many `requested` rows to its contact came before it in its minute, up to LIMIT + 1.
_EARLIER_SQL = f"""
SELECT c.id, (
    SELECT count(*) FROM (
        SELECT 1 FROM {_TABLE} e
        WHERE e.contact_public_id = c.contact_public_id AND e.event = %(requested)s
          AND e.created_at >= date_trunc('minute', c.created_at, 'UTC') AND e.created_at <= c.created_at
          AND (e.created_at, e.id) < (c.created_at, c.id)
        LIMIT {FATIGUE_LIMIT + 1}
    ) earlier
)
FROM {_TABLE} c WHERE c.id = ANY(%(ids)s::bigint[])
"""


def minute_of(moment: datetime) -> tuple[datetime, datetime]:
    start = moment.replace(second=0, microsecond=0)
    return start, start + timedelta(minutes=1)


def fatigue_sort(claimed: list[Delivery], *, now: datetime) -> dict[int, list[Delivery]]:
    """What the fatigue rule makes of claimed rows: for each row to send now, [] (alone) or its digest's
    rows; the rows held for a digest are moved to their time here, and left out."""
    held: dict[datetime, list[Delivery]] = defaultdict(list)  # due time → rows waiting for it
    sends: dict[int, list[Delivery]] = {}
    due: dict[tuple[str, datetime], list[Delivery]] = defaultdict(list)  # (contact, minute) → its digest's rows here
    first = [d for d in claimed if _is_fatigued(d) and not d.digest]
    earlier = _earlier(first)
    for delivery in claimed:
        if not _is_fatigued(delivery):
            sends[delivery.pk] = []
        elif not delivery.digest:
            count = earlier.get(delivery.pk, 0)
            if count < FATIGUE_LIMIT:
                sends[delivery.pk] = []
            else:
                end = minute_of(delivery.created_at)[1]
                held[end if count == FATIGUE_LIMIT else end + FOLLOWER_GRACE].append(delivery)
        elif now < minute_of(delivery.created_at)[1]:
            held[minute_of(delivery.created_at)[1]].append(delivery)
        else:
            due[delivery.contact_public_id, minute_of(delivery.created_at)[0]].append(delivery)
    for rows in due.values():
        # Only the leader — the oldest still pending — reads its digest's rows: a follower costs one
        # index probe, not a read of the whole digest (thousands of rows after a burst, per follower).
        leader = _pending_digest(rows[0]).values_list("pk", "next_attempt_at").first()
        for delivery in rows:
            if leader is not None and leader[0] == delivery.pk:
                sends[delivery.pk] = list(_pending_digest(delivery).select_related("approval__config"))
            else:
                # Its leader sends it, or tries again later: look again after that.
                leader_due = leader[1] if leader else now
                held[max(leader_due, now) + FOLLOWER_GRACE].append(delivery)
    for due, rows in held.items():
        # Not an attempt: the claim counted one, given back.
        Delivery.objects.filter(pk__in=[d.pk for d in rows], status=DeliveryStatus.PENDING).update(
            digest=True, next_attempt_at=due, attempts=F("attempts") - 1
        )
    return sends


def _is_fatigued(delivery: Delivery) -> bool:
    return delivery.event == DeliveryEvent.REQUESTED and delivery.channel in PEOPLE_CHANNELS


def _earlier(rows: list[Delivery]) -> dict[int, int]:
    if not rows:
        return {}
    with connection.cursor() as cursor:
        cursor.execute(_EARLIER_SQL, {"requested": DeliveryEvent.REQUESTED, "ids": [d.pk for d in rows]})
        return dict(cursor.fetchall())


def _pending_digest(delivery: Delivery) -> QuerySet[Delivery]:
    """The pending digest rows of `delivery`'s contact and minute, oldest first (the oldest leads)."""
    start, end = minute_of(delivery.created_at)
    return Delivery.objects.filter(
        contact_public_id=delivery.contact_public_id,
        event=DeliveryEvent.REQUESTED,
        created_at__gte=start,
        created_at__lt=end,
        digest=True,
        status=DeliveryStatus.PENDING,
    ).order_by("created_at", "pk")
