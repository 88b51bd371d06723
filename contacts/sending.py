"""The notification outbox, sending: claim due rows, send them, record what happened, retry.

Called by contacts.tasks in the django-q2 cluster. `deliveries_send_due` claims due rows fairly
(contacts.claiming: SKIP LOCKED, a lease, per workspace and channel), sorts them by the fatigue rule
(contacts.fatigue) and sends them on a fixed pool of threads: at most MAX_IN_FLIGHT sends at once,
PER_CONTACT_IN_FLIGHT to one contact and PER_CHANNEL_IN_FLIGHT on one workspace's channel, and a contact
or channel that has its share is left out of the next claim — so an endpoint that never answers holds only its
own rows, never a batch. A run claims for RUN_SECONDS at most, so the task ends well within
django-q2's timeout; what is left is the next run's. A row whose request was decided before its turn
is `skipped`, never sent late. A send may repeat (same delivery id, for receivers to deduplicate),
never be lost. What a message says is contacts.messages'; the rows are written by contacts.outbox.
"""

from __future__ import annotations

import contextvars
import logging
import os
import queue
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connections
from django.db.models import F
from django.utils import timezone

from common.warm import warm_urls

from .batch import batch_scope
from .claiming import CLAIM_BATCH, deliveries_claim
from .fatigue import fatigue_sort
from .messages import notice_for
from .models import Channel, Delivery, DeliveryEvent, DeliveryStatus
from .refs import send_refusal
from .transports import Notice, Recipient, TransportError, release, transport_for

logger = logging.getLogger(__name__)

# Sends in flight at once per worker: endpoints are slow far more often than we are.
SEND_THREADS = 8
MAX_IN_FLIGHT = 12  # claimed and not yet recorded: SEND_THREADS sending, the rest next in line
PER_CONTACT_IN_FLIGHT = 3
PER_CHANNEL_IN_FLIGHT = 5  # of one workspace's channel: another workspace's webhooks never wait for these
# A run stops claiming after this long (its sends then finish, each bounded by its transport's
# timeout), so the task ends within django-q2's timeout however large the backlog.
RUN_SECONDS = 30
# Events that are only worth sending while their request waits for a person.
WHILE_UNDECIDED = (DeliveryEvent.REQUESTED, DeliveryEvent.REMINDER, DeliveryEvent.ESCALATED)


def deliveries_send_due(*, seconds: float = RUN_SECONDS) -> int:
    """Claim and send due rows until none is left (or `seconds` have passed); returns how many were
    sent or failed for good."""
    run = _Run()
    _senders()  # started (and warmed) once per process, before the clock runs
    deadline = time.monotonic() + seconds
    try:
        while True:
            run.settle()
            if run.in_flight >= MAX_IN_FLIGHT:
                run.wait()
                continue
            claimed = []
            if time.monotonic() < deadline:
                claimed = deliveries_claim(
                    limit=CLAIM_BATCH, busy_contacts=run.busy_contacts(), busy_channels=run.busy_channels()
                )
            if claimed:
                run.start(claimed)
            elif run.in_flight:
                run.wait()
            else:
                break
    finally:
        run.drain()
        _release_senders()
    return run.done


@dataclass
class _Send:
    delivery: Delivery
    recipient: Recipient
    notice: Notice | None = None
    digest: list[Delivery] = field(default_factory=list)
    error: TransportError | None = None


class _Run:
    """One run's sends in flight, and their results as they finish (recorded by the run's own thread)."""

    def __init__(self) -> None:
        self.done = 0
        self.in_flight = 0
        self.contacts: Counter[str] = Counter()
        self.channels: Counter[tuple[int, str]] = Counter()  # (workspace, channel)
        self.finished: queue.Queue[tuple[Delivery, _Send | None]] = queue.Queue()

    def busy_contacts(self) -> list[str]:
        """Contacts that have their share in flight: left out of the next claim (a row past it is put back)."""
        return [contact for contact, n in self.contacts.items() if n >= PER_CONTACT_IN_FLIGHT]

    def busy_channels(self) -> list[tuple[int, str]]:
        return [group for group, n in self.channels.items() if n >= PER_CHANNEL_IN_FLIGHT]

    def _room(self, delivery: Delivery) -> bool:
        return (
            self.contacts[delivery.contact_public_id] < PER_CONTACT_IN_FLIGHT
            and self.channels[delivery.workspace_id, delivery.channel] < PER_CHANNEL_IN_FLIGHT
        )

    def start(self, claimed: list[Delivery]) -> None:
        """Sort the claimed rows (decided → skipped, the fatigue rule) and hand the rest to the send threads."""
        now = timezone.now()
        undecided = _skip_decided(claimed, now=now)
        sends = fatigue_sort(undecided, now=now)
        rows, over = [], []
        for delivery in (d for d in undecided if d.pk in sends):
            if self._room(delivery):
                rows.append(delivery)
                self.contacts[delivery.contact_public_id] += 1
                self.channels[delivery.workspace_id, delivery.channel] += 1
            else:
                over.append(delivery.pk)
        if over:  # past its contact's or channel's share: due again at once, for a later claim
            Delivery.objects.filter(pk__in=over, status=DeliveryStatus.PENDING).update(
                next_attempt_at=now, attempts=F("attempts") - 1
            )
        # The claim's sends share their alike reads (contacts.batch), each on its thread.
        with batch_scope(requests={d.approval_id for d in rows if d.approval_id is not None}):
            refused = _refusals(rows)
            pool = _senders()
            for delivery in rows:
                self.in_flight += 1
                job = (delivery, sends[delivery.pk], refused.get(delivery.pk), now)
                future = pool.submit(contextvars.copy_context().run, _prepare_and_send, *job)
                future.add_done_callback(lambda f, d=delivery: self.finished.put((d, _result(f))))

    def wait(self) -> None:
        """Until one send finishes (or a moment has passed: new rows may have come due)."""
        try:
            self.finished.put(self.finished.get(timeout=0.2))
        except queue.Empty:
            pass

    def settle(self) -> None:
        """Record every finished send: one UPDATE for those sent, one per failure."""
        sends = []
        while True:
            try:
                delivery, send = self.finished.get_nowait()
            except queue.Empty:
                break
            self.in_flight -= 1
            self.contacts[delivery.contact_public_id] -= 1
            self.channels[delivery.workspace_id, delivery.channel] -= 1
            if send is not None:
                sends.append(send)
        if sends:
            self.done += _record(sends)

    def drain(self) -> None:
        while self.in_flight:
            self.wait()
            self.settle()


def _result(future: Future) -> _Send | None:
    try:
        return future.result()
    except Exception:  # a bug preparing a message must not stop the run; the row comes due again
        logger.exception("Preparing a delivery failed")
        return None


def _prepare_and_send(delivery: Delivery, digest: list[Delivery], refused: str | None, now: datetime) -> _Send:
    send = _prepare(delivery=delivery, digest=digest, refused=refused)
    _attempt(send)
    return send


def _skip_decided(claimed: list[Delivery], *, now: datetime) -> list[Delivery]:
    """Mark `skipped` the rows whose request no longer waits (decided, expired): sent now they would
    only be late. Returns the rest."""
    late = [
        d.pk
        for d in claimed
        if d.approval is not None and d.event in WHILE_UNDECIDED and not d.approval.is_pending(now)
    ]
    if late:
        Delivery.objects.filter(pk__in=late, status=DeliveryStatus.PENDING).update(
            status=DeliveryStatus.SKIPPED, attempts=F("attempts") - 1
        )
    return [d for d in claimed if d.pk not in late]


def _record(sends: list[_Send]) -> int:
    sent = [d.pk for s in sends if s.error is None for d in (s.digest or [s.delivery])]
    if sent:
        # A row its request's decision marked `skipped` while it was on its way was still delivered: the
        # log says what the receiver got (contacts.outbox skips what is unsent, not what is in flight).
        Delivery.objects.filter(pk__in=sent, status__in=[DeliveryStatus.PENDING, DeliveryStatus.SKIPPED]).update(
            status=DeliveryStatus.SENT, sent_at=timezone.now(), last_error=""
        )
    settled = len(sent)
    now = timezone.now()
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


def _prepare(*, delivery: Delivery, digest: list[Delivery], refused: str | None = None) -> _Send:
    """What to send for one claimed row: its notice (alone, or `digest`'s), or why it cannot be sent.
    `refused`: why the contact may not use a variable it names (contacts.refs), failing it for good."""
    send = _Send(
        delivery=delivery,
        recipient=Recipient.from_frozen({**delivery.recipient, "id": delivery.contact_public_id}),
        digest=digest,
    )
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
