"""The notification outbox, sending: claim due rows, send them, record what happened, retry.

Called by contacts.tasks in the django-q2 cluster. `deliveries_send_due` claims due rows with
FOR UPDATE SKIP LOCKED, moving each a lease ahead, so a worker killed mid-send leaves rows that
come due again by themselves: a send may repeat (with the same delivery id, for receivers to
deduplicate), never be lost. Claiming a request's first `requested` row also writes its
follow-ups (reminders, escalations), in the claim's transaction. What a message says is
contacts.messages'; the rows are written by contacts.outbox.
"""

from __future__ import annotations

import contextvars
import logging
import os
import random
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connections, transaction
from django.db.models import Count, F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce, TruncMinute
from django.utils import timezone

from common.warm import warm_urls

from .batch import batch_scope
from .messages import notice_for
from .models import WHILE_PENDING, Channel, Delivery, DeliveryEvent, DeliveryStatus
from .outbox import followups_write
from .refs import send_refusal
from .transports import Notice, Recipient, TransportError, release, transport_for

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
    try:
        for _ in range(max_batches):
            claimed = deliveries_claim()
            if not claimed:
                break
            done += _send_batch(claimed)
    finally:
        _release_senders()
    return done


@dataclass
class _Send:
    delivery: Delivery
    recipient: Recipient
    notice: Notice | None = None
    digest: list[Delivery] = field(default_factory=list)
    error: TransportError | None = None


def _send_batch(claimed: list[Delivery]) -> int:
    """Prepare and send each message on a few threads (a message's reads overlap another's send),
    then record the whole batch: one UPDATE for the sent, one per failure."""
    now = timezone.now()
    earlier = _earlier_in_minute(claimed)

    def prepare_and_send(delivery: Delivery) -> _Send | None:
        send = _prepare(
            delivery=delivery, now=now, earlier=earlier.get(delivery.pk, 0), refused=refused.get(delivery.pk)
        )
        if send is not None:
            _attempt(send)
        return send

    # The batch's sends share their alike reads (contacts.batch), each on its thread.
    with batch_scope(requests={d.approval_id for d in claimed if d.approval_id is not None}):
        refused = _refusals(claimed)
        pool = _senders()
        futures = [pool.submit(contextvars.copy_context().run, prepare_and_send, d) for d in claimed]
        sends = [send for send in (f.result() for f in futures) if send is not None]
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


def _refusals(claimed: list[Delivery]) -> dict[int, str]:
    """Why a row's contact may not use a variable it names, by row: whatever a contact names must still
    be its workspace's (contacts.refs) — one saved before references were judged, or whose grant was
    revoked since, fails naming the variable before anything is resolved. Read here, before the send
    threads, once per workspace and name for the batch."""
    refused = {}
    for delivery in claimed:
        refs = [delivery.recipient.get("channel_ref", ""), delivery.recipient.get("secret_ref", "")]
        if why := send_refusal(workspace=delivery.workspace, refs=refs):
            refused[delivery.pk] = why
    return refused


_pool: ThreadPoolExecutor | None = None
_pool_pid = 0
_pool_lock = threading.Lock()


def _senders() -> ThreadPoolExecutor:
    """This process's send threads, kept from batch to batch: each keeps its keep-alive HTTP session
    (transports/webhook.py), so a burst reuses SEND_THREADS connections per worker. A pool per batch
    opened and dropped eight connections every 50 sends; a loaded receiver's listen queue overflowed
    and the refused sends waited a minute for their retry (bench/notify.py).

    A send thread reads and writes the database (preparing a message; the chat and push transports
    while sending): it keeps the connection it opened for the rest of the run (a connection per
    send cost more than the send, docs/performance.md), and deliveries_send_due hands them all back
    when it ends, so an idle worker holds none."""
    global _pool, _pool_pid
    with _pool_lock:
        if _pool is None or _pool_pid != os.getpid():  # threads do not survive a fork
            _warm()
            _pool = ThreadPoolExecutor(max_workers=SEND_THREADS, thread_name_prefix="hitl-send")
            _pool_pid = os.getpid()
            # All SEND_THREADS started now, so that _on_every_sender reaches each of them.
            _on_every_sender(lambda: None, pool=_pool)
        return _pool


def _warm() -> None:
    """What a process's sends all need once, done before its send threads start: the URL tables (eight
    threads starting together filled them eight times over), and the transports' libraries, imported
    on first use."""
    warm_urls()
    transport_for(Channel.EMAIL)  # imports every transport's module


def _release_senders() -> None:
    """Each send thread hands back the database connection its sends opened, and closes its SMTP one."""
    with _pool_lock:
        pool = _pool if _pool_pid == os.getpid() else None
    if pool is not None:
        _on_every_sender(_release_thread, pool=pool)


def _release_thread() -> None:
    release()
    connections.close_all()


def _on_every_sender(job: Callable[[], object], *, pool: ThreadPoolExecutor) -> None:
    """Run `job` once on each send thread: every one of SEND_THREADS copies waits at a barrier until
    all have started, so no thread can take two (and a pool short of threads starts the rest)."""
    barrier = threading.Barrier(SEND_THREADS)

    def run() -> None:
        barrier.wait(timeout=30)
        job()

    for future in [pool.submit(run) for _ in range(SEND_THREADS)]:
        future.result()


def _prepare(*, delivery: Delivery, now: datetime, earlier: int, refused: str | None = None) -> _Send | None:
    """What to send for one claimed row, or None when nothing is to be sent now. `earlier`: for a first
    `requested` row to a person, how many came before it for its contact in its minute; `refused`: why
    the contact may not use a variable it names (contacts.refs), failing it for good."""
    approval = delivery.approval
    if approval is not None and delivery.event in WHILE_PENDING and not approval.is_pending(now):
        Delivery.objects.filter(pk=delivery.pk, status=DeliveryStatus.PENDING).delete()
        return None
    send = _Send(
        delivery=delivery, recipient=Recipient.from_frozen({**delivery.recipient, "id": delivery.contact_public_id})
    )
    if delivery.event == DeliveryEvent.REQUESTED and delivery.channel in PEOPLE_CHANNELS:
        held = _fatigue(delivery=delivery, now=now, earlier=earlier)
        if held is None:
            return None  # held back for the digest at the end of its minute
        send.digest = held
    if transport_for(delivery.channel) is None:
        send.error = TransportError(f"the {delivery.channel} channel cannot send yet", permanent=True)
        return send
    if refused:
        send.error = TransportError(refused, permanent=True)
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


def _earlier_in_minute(claimed: list[Delivery]) -> dict[int, int]:
    """For each first `requested` row to a person among `claimed`, how many `requested` rows to its
    contact came before it in its minute (by time, then id): the fatigue rule's count, one query a batch."""
    first = [
        d.pk for d in claimed if d.event == DeliveryEvent.REQUESTED and d.channel in PEOPLE_CHANNELS and not d.digest
    ]
    if not first:
        return {}
    before = Delivery.objects.filter(
        contact_public_id=OuterRef("contact_public_id"),
        event=DeliveryEvent.REQUESTED,
        created_at__gte=OuterRef("minute"),
    ).filter(Q(created_at__lt=OuterRef("created_at")) | Q(created_at=OuterRef("created_at"), pk__lt=OuterRef("pk")))
    count = before.order_by().values("contact_public_id").annotate(n=Count("pk")).values("n")
    rows = Delivery.objects.filter(pk__in=first).annotate(minute=TruncMinute("created_at", tzinfo=UTC))
    return dict(rows.annotate(n=Coalesce(Subquery(count), 0)).values_list("pk", "n"))


def _fatigue(*, delivery: Delivery, now: datetime, earlier: int) -> list[Delivery] | None:
    """[] to send this request on its own; None to hold it for the digest; else the digest's rows.

    The first FATIGUE_LIMIT requests of a minute for one contact go out one by one (`earlier`:
    _earlier_in_minute's count); the rest of that minute wait for its end and go out as one digest,
    sent by the digest's oldest row.
    """
    start, end = _minute_of(delivery.created_at)
    same_minute = Delivery.objects.filter(
        contact_public_id=delivery.contact_public_id,
        event=DeliveryEvent.REQUESTED,
        created_at__gte=start,
        created_at__lt=end,
    )
    if not delivery.digest:
        if earlier < FATIGUE_LIMIT:
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
