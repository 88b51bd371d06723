"""The notification outbox, sending: claim due rows, send them, record what happened, retry.

Called by contacts.tasks in the django-q2 cluster. `deliveries_send_due` claims due rows with
FOR UPDATE SKIP LOCKED, moving each a lease ahead, so a worker killed mid-send leaves rows that
come due again by themselves: a send may repeat (with the same delivery id, for receivers to
deduplicate), never be lost. Claiming a request's first `requested` row also writes its
follow-ups (reminders, escalations), in the claim's transaction. What a message says is
contacts.messages'; the rows are written by contacts.outbox.
"""

from __future__ import annotations

import logging
import os
import random
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from .messages import notice_for
from .models import WHILE_PENDING, Channel, Delivery, DeliveryEvent, DeliveryStatus
from .outbox import followups_write
from .transports import Notice, Recipient, TransportError, transport_for

logger = logging.getLogger(__name__)

# Channels that reach people: the fatigue rule (digest) applies to them; machines get every event.
PEOPLE_CHANNELS = (Channel.EMAIL, Channel.SLACK, Channel.PUSH, Channel.TELEGRAM)
FATIGUE_LIMIT = 5  # more requests than this for one contact within a minute → the rest as one digest
CLAIM_BATCH = 50
# Sends in flight at once per worker: endpoints are slow far more often than we are.
SEND_THREADS = 8


def deliveries_claim(*, limit: int = CLAIM_BATCH, now: datetime | None = None) -> list[Delivery]:
    """Take up to `limit` due rows for this worker: each moves a lease ahead and counts an attempt.

    SKIP LOCKED lets several workers split the rows instead of queueing on each other; the lease
    makes a row whose worker died come due again without anyone noticing the death. A `requested`
    row claimed for the first time schedules its request's follow-ups in the same transaction, so
    a claim that commits has written them and one that does not will be made again.
    """
    now = now or timezone.now()
    lease = now + timedelta(seconds=settings.HITL_DELIVERY_LEASE_SECONDS)
    with transaction.atomic():
        due = Delivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now).order_by(
            "next_attempt_at"
        )
        due = due.select_for_update(skip_locked=True)
        ids = list(due.values_list("pk", flat=True)[:limit])
        if not ids:
            return []
        Delivery.objects.filter(pk__in=ids, status=DeliveryStatus.PENDING).update(
            next_attempt_at=lease, attempts=F("attempts") + 1
        )
        claimed = list(Delivery.objects.filter(pk__in=ids).select_related("approval__config", "workspace"))
        followups_write(
            [d.approval for d in claimed if d.event == DeliveryEvent.REQUESTED and d.attempts == 1], now=now
        )
    return claimed


def deliveries_send_due(*, max_batches: int = 1000) -> int:
    """Claim and send due rows until none is left; returns how many were sent or failed for good."""
    done = 0
    for _ in range(max_batches):
        claimed = deliveries_claim()
        if not claimed:
            break
        done += _send_batch(claimed)
    return done


@dataclass
class _Send:
    delivery: Delivery
    recipient: Recipient
    notice: Notice | None = None
    digest: list[Delivery] = field(default_factory=list)
    error: TransportError | None = None


def _send_batch(claimed: list[Delivery]) -> int:
    """Prepare each message (database reads, here), send them on a few threads (network only),
    then record the whole batch: one UPDATE for the sent, one per failure."""
    now = timezone.now()
    sends = [send for delivery in claimed if (send := _prepare(delivery=delivery, now=now)) is not None]
    list(_senders().map(_attempt, sends))
    sent = [d.pk for s in sends if s.error is None for d in (s.digest or [s.delivery])]
    if sent:
        Delivery.objects.filter(pk__in=sent, status=DeliveryStatus.PENDING).update(
            status=DeliveryStatus.SENT, sent_at=timezone.now(), last_error=""
        )
    settled = len(sent)
    for send in sends:
        if send.error is not None:
            settled += _record_failure(delivery=send.delivery, error=send.error, now=now, also=send.digest)
    return settled


_pool: ThreadPoolExecutor | None = None
_pool_pid = 0
_pool_lock = threading.Lock()


def _senders() -> ThreadPoolExecutor:
    """This process's send threads, kept from batch to batch: each keeps its keep-alive HTTP session
    (transports/webhook.py), so a burst reuses SEND_THREADS connections per worker. A pool per batch
    opened and dropped eight connections every 50 sends; a loaded receiver's listen queue overflowed
    and the refused sends waited a minute for their retry (bench/notify.py)."""
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():  # threads do not survive a fork
            _pool = ThreadPoolExecutor(max_workers=SEND_THREADS, thread_name_prefix="hitl-send")
            _pool_pid = os.getpid()
        return _pool


def _prepare(*, delivery: Delivery, now: datetime) -> _Send | None:
    """What to send for one claimed row, or None when nothing is to be sent now."""
    approval = delivery.approval
    if approval is not None and delivery.event in WHILE_PENDING and not approval.is_pending(now):
        Delivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.PENDING).delete()
        return None
    send = _Send(
        delivery=delivery, recipient=Recipient.from_frozen({**delivery.recipient, "id": delivery.contact_public_id})
    )
    if delivery.event == DeliveryEvent.REQUESTED and delivery.channel in PEOPLE_CHANNELS:
        held = _fatigue(delivery=delivery, now=now)
        if held is None:
            return None  # held back for the digest at the end of its minute
        send.digest = held
    if transport_for(delivery.channel) is None:
        send.error = TransportError(f"the {delivery.channel} channel cannot send yet", permanent=True)
        return send
    send.notice = notice_for(delivery=delivery, recipient=send.recipient, digest=send.digest)
    return send


def _attempt(send: _Send) -> None:
    if send.error is not None:
        return
    try:
        transport_for(send.delivery.channel).notify(send.notice, send.recipient)
    except TransportError as error:
        send.error = error
    except Exception:  # a bug in a transport must not stop the batch; the row is retried
        logger.exception("Delivery %s: the %s transport failed", send.delivery.public_id, send.delivery.channel)
        send.error = TransportError(f"the {send.delivery.channel} transport failed unexpectedly")


def _record_failure(*, delivery: Delivery, error: TransportError, now: datetime, also: list[Delivery]) -> int:
    ids = [d.pk for d in also] or [delivery.pk]
    # The message is the transport's: a variable name or an HTTP status, never an address.
    logger.warning("Delivery %s (%s) failed: %s", delivery.public_id, delivery.channel, error.message)
    if error.permanent or delivery.attempts >= settings.HITL_DELIVERY_MAX_ATTEMPTS:
        Delivery.objects.filter(pk__in=ids, status=DeliveryStatus.PENDING).update(
            status=DeliveryStatus.FAILED, last_error=error.message[:500]
        )
        return len(ids)
    # Not before the receiver asked (Slack's 429 Retry-After), nor before the backoff's next step.
    wait = max(retry_delay(delivery.attempts), timedelta(seconds=error.retry_after or 0))
    Delivery.objects.filter(pk__in=ids, status=DeliveryStatus.PENDING).update(
        next_attempt_at=now + wait, last_error=error.message[:500]
    )
    return 0


def retry_delay(attempts: int) -> timedelta:
    """Exponential backoff with ±20% jitter: 1, 2, 4, 8, 16 min… (five attempts span at least 12 min)."""
    base = settings.HITL_DELIVERY_RETRY_BASE_SECONDS * 2 ** max(0, attempts - 1)
    return timedelta(seconds=min(base, 6 * 3600) * random.uniform(0.8, 1.2))


def _minute_of(moment: datetime) -> tuple[datetime, datetime]:
    start = moment.replace(second=0, microsecond=0)
    return start, start + timedelta(minutes=1)


def _fatigue(*, delivery: Delivery, now: datetime) -> list[Delivery] | None:
    """[] to send this request on its own; None to hold it for the digest; else the digest's rows.

    The first FATIGUE_LIMIT requests of a minute for one contact go out one by one; the rest of that
    minute wait for its end and go out as one digest, sent by the digest's oldest row.
    """
    start, end = _minute_of(delivery.created_at)
    same_minute = Delivery.objects.filter(
        contact_public_id=delivery.contact_public_id,
        event=DeliveryEvent.REQUESTED,
        created_at__gte=start,
        created_at__lt=end,
    )
    if not delivery.digest:
        earlier = same_minute.filter(
            Q(created_at__lt=delivery.created_at) | Q(created_at=delivery.created_at, pk__lt=delivery.pk)
        )
        if earlier.count() < FATIGUE_LIMIT:
            return []
        Delivery.objects.filter(pk=delivery.pk).update(digest=True, next_attempt_at=end, attempts=delivery.attempts - 1)
        return None
    if now < end:
        Delivery.objects.filter(pk=delivery.pk).update(next_attempt_at=end, attempts=delivery.attempts - 1)
        return None
    rows = list(
        same_minute.filter(digest=True, status=DeliveryStatus.PENDING).select_related("approval__config").order_by("pk")
    )
    if not rows or rows[0].pk != delivery.pk:
        # Not the oldest: its digest is the oldest row's to send; look again shortly.
        Delivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.PENDING).update(
            next_attempt_at=now + timedelta(seconds=5), attempts=delivery.attempts - 1
        )
        return None
    return rows
