"""The notification outbox: delivery rows written in the event's transaction, sent by the cluster.

Writers (called by the approval services inside the transaction that makes the event):
`deliveries_for_registration`, `deliveries_for_resolution`; and `delivery_test_create` for the
Contacts tab and API. Sender (called by contacts.tasks in the django-q2 cluster):
`deliveries_send_due` claims due rows with FOR UPDATE SKIP LOCKED, moving each a lease ahead, so
a worker killed mid-send leaves rows that come due again by themselves: a send may repeat (with
the same delivery id, for receivers to deduplicate), never be lost. Claiming a request's first
`requested` row also writes its follow-ups (reminders, escalations), in the claim's transaction.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from .models import WHILE_PENDING, Channel, Contact, Delivery, DeliveryEvent, DeliveryStatus
from .transports import Notice, Recipient, TransportError, address_of, transport_for

if TYPE_CHECKING:
    from approvals.models import ApprovalRequest
    from rules.models import ConfigVersion

logger = logging.getLogger(__name__)

# Channels that reach people: the fatigue rule (digest) applies to them; machines get every event.
PEOPLE_CHANNELS = (Channel.EMAIL, Channel.SLACK)
FATIGUE_LIMIT = 5  # more requests than this for one contact within a minute → the rest as one digest
CLAIM_BATCH = 50
# Sends in flight at once per worker: endpoints are slow far more often than we are.
SEND_THREADS = 8
# A burst of events wakes the cluster once per this interval, not once per commit (see _Kicker).
KICK_INTERVAL = 0.1
REMINDER_BEFORE = timedelta(hours=1)
SHORT_LIFETIME = timedelta(hours=5)


# --- Writing: in the event's transaction --------------------------------------------------------


def reminder_at(*, created_at: datetime, expires_at: datetime) -> datetime:
    """One hour before expiry, or at 80% of a lifetime shorter than five hours (API.md)."""
    lifetime = expires_at - created_at
    if lifetime < SHORT_LIFETIME:
        return created_at + lifetime * 0.8
    return expires_at - REMINDER_BEFORE


def _row(*, approval: ApprovalRequest | Resolved, contact: dict, event: str, due: datetime, now: datetime) -> Delivery:
    # By id when the request is a lightweight `Resolved` row (a sweep's), by object otherwise
    # (a registration's request has no id yet).
    link = {"approval_id": approval.pk} if isinstance(approval, Resolved) else {"approval": approval}
    return Delivery(
        workspace_id=approval.workspace_id,
        **link,
        contact_public_id=contact["id"],
        recipient=contact,
        event=event,
        channel=contact.get("channel", ""),
        next_attempt_at=due,
        created_at=now,
    )


def _contacts(version: ConfigVersion, ids: list[str]) -> list[dict]:
    """The frozen contacts of `version` named by `ids`, skipping channel `none` (nothing to send)."""
    contacts = [version.contact(i) for i in ids]
    return [c for c in contacts if c is not None and c.get("channel") != Channel.NONE]


def deliveries_for_registration(*, approval: ApprovalRequest, rule: dict, version: ConfigVersion) -> list[Delivery]:
    """`requested` to each notified contact, as unsaved rows: the registration writes them with the
    request, in one statement on PostgreSQL (approvals.services._insert), then calls `kick_sender`.

    The follow-ups (reminders, escalations) are not written here: the sender writes them when it
    first claims the request's `requested` rows (`_write_followups`), off the request's path — a
    registration writes one row per notified contact, not two. A rule that notifies nobody but
    escalates has no `requested` row to wait for: its escalations are written here.
    """
    now = approval.created_at
    rows = [
        _row(approval=approval, contact=contact, event=DeliveryEvent.REQUESTED, due=now, now=now)
        for contact in _contacts(version, rule.get("notify") or [])
    ]
    if not rows:
        rows = followups(approval=approval, rule=rule, version=version, now=now)
    for row in rows:
        row.public_id = _new_id()
    return rows


def followups(*, approval: ApprovalRequest, rule: dict, version: ConfigVersion, now: datetime) -> list[Delivery]:
    """A request's scheduled `reminder` to each notified contact and `escalated` to each escalation
    contact, as unsaved rows (without public ids): due when API.md says, sent only if still pending."""
    rows = []
    remind = reminder_at(created_at=approval.created_at, expires_at=approval.expires_at)
    for contact in _contacts(version, rule.get("notify") or []):
        rows.append(_row(approval=approval, contact=contact, event=DeliveryEvent.REMINDER, due=remind, now=now))
    after = rule.get("escalate_after_seconds")
    if after:
        escalate = approval.created_at + timedelta(seconds=after)
        if escalate < approval.expires_at:
            for contact in _contacts(version, rule.get("escalate_to") or []):
                rows.append(
                    _row(approval=approval, contact=contact, event=DeliveryEvent.ESCALATED, due=escalate, now=now)
                )
    return rows


class Resolved(NamedTuple):
    """What deliveries_for_resolution reads of a resolved request: a sweep passes these, not models."""

    pk: int
    workspace_id: int
    rule_id: str
    config_id: int
    config_version: int


def deliveries_for_resolution(*, approvals: list[ApprovalRequest | Resolved], event: str) -> int:
    """`decided` or `expired` to each notified contact (and to escalation contacts already told),
    and the pending reminders and escalations of those requests dropped: a request decided
    meanwhile sends neither. Call inside the resolving transaction.

    A request whose rule tells nobody costs no query here (its frozen version is cached).
    """
    rules = {a.pk: rule for a, rule in _rules_of(approvals) if rule["notify"] or rule["escalate_to"]}
    if not rules:
        return 0
    now = timezone.now()
    ids = list(rules)
    Delivery.objects.filter(approval_id__in=ids, event__in=WHILE_PENDING, status=DeliveryStatus.PENDING).delete()
    told = set()
    if any(rule["escalate_to"] for rule in rules.values()):
        told = set(
            Delivery.objects.filter(approval_id__in=ids, event=DeliveryEvent.ESCALATED).values_list(
                "approval_id", "contact_public_id"
            )
        )
    rows = []
    for approval in approvals:
        rule = rules.get(approval.pk)
        if rule is None:
            continue
        version = _VERSIONS[(approval.config_id, approval.config_version)]
        names = list(rule["notify"]) + [c for c in rule["escalate_to"] if (approval.pk, c) in told]
        for contact in _contacts(version, list(dict.fromkeys(names))):
            row = _row(approval=approval, contact=contact, event=event, due=now, now=now)
            row.public_id = _new_id()
            rows.append(row)
    if rows:
        Delivery.objects.bulk_create(rows, ignore_conflicts=True)
        kick_sender()
    return len(rows)


# Published versions never change: each process keeps the ones it has read.
_VERSIONS: dict = {}


def resolution_tells(keys: set[tuple[int, int, str]]) -> set[tuple[int, int, str]]:
    """The (config_id, config_version, rule_id) among `keys` whose frozen rule tells anyone when a
    request resolves. A sweep asks this once per batch, so a batch whose rules tell nobody builds
    nothing per request; no query once the versions are cached."""
    _load_versions({(config_id, number) for config_id, number, rule_id in keys if rule_id})
    tells = set()
    for config_id, number, rule_id in keys:
        version = _VERSIONS.get((config_id, number)) if rule_id else None
        rule = version.rule(rule_id) if version else None
        if rule is not None and (rule["notify"] or rule["escalate_to"]):
            tells.add((config_id, number, rule_id))
    return tells


def _load_versions(keys: set[tuple[int, int]]) -> None:
    """Cache the (config_id, number) versions this process has not seen yet, in one query."""
    from rules.models import ConfigVersion

    missing = keys - set(_VERSIONS)
    if missing:
        query = Q()
        for config_id, number in missing:
            query |= Q(config_id=config_id, number=number)
        for version in ConfigVersion.objects.filter(query):
            _VERSIONS[(version.config_id, version.number)] = version


def _rules_of(approvals: list[ApprovalRequest | Resolved]) -> list[tuple[ApprovalRequest | Resolved, dict]]:
    """(request, its frozen rule) for each gate request among `approvals` whose version and rule are
    found; token caps belong to no rule. One query for the versions this process has not seen yet."""
    approvals = [a for a in approvals if a.rule_id]
    _load_versions({(a.config_id, a.config_version) for a in approvals})
    found = []
    for approval in approvals:
        version = _VERSIONS.get((approval.config_id, approval.config_version))
        rule = version.rule(approval.rule_id) if version else None
        if rule is not None:
            found.append((approval, rule))
    return found


def delivery_test_create(*, contact: Contact) -> Delivery:
    """A `test` event to a draft contact (the Contacts tab's "Send test", the API's …/test)."""
    now = timezone.now()
    with transaction.atomic():
        delivery = Delivery.objects.create(
            public_id=_new_id(),
            workspace_id=contact.config.workspace_id,
            contact_public_id=contact.public_id,
            recipient=contact.frozen(),
            event=DeliveryEvent.TEST,
            channel=contact.channel,
            next_attempt_at=now,
            created_at=now,
        )
        kick_sender()
    return delivery


def kick_sender() -> None:
    """Wake the cluster once the current transaction commits (the minute schedule is the safety net)."""
    transaction.on_commit(_enqueue)


class _Kicker:
    """Enqueues the send task from a thread of its own, at most once per KICK_INTERVAL per process.

    A commit only sets an event (no query on the request's path); the thread wakes, enqueues one
    task, and waits KICK_INTERVAL before it looks again. Every commit is followed by an enqueue
    that happens after it, so no row waits for the minute schedule; a burst costs one task.
    """

    def __init__(self) -> None:
        self.wanted = threading.Event()
        self.pid = 0
        self.lock = threading.Lock()

    def kick(self) -> None:
        if self.pid != os.getpid():  # first use in this process (after a fork: threads do not survive it)
            with self.lock:
                if self.pid != os.getpid():
                    self.wanted = threading.Event()
                    threading.Thread(target=self._run, name="hitl-outbox-kicker", daemon=True).start()
                    self.pid = os.getpid()
        self.wanted.set()

    def _run(self) -> None:
        from django.db import connections
        from django_q.tasks import async_task

        while True:
            self.wanted.wait()
            self.wanted.clear()
            try:
                async_task("contacts.tasks.send_due", save=False)
            except Exception:  # the minute schedule still sends; say why the kick failed
                logger.exception("Could not enqueue the notification task")
            finally:
                # Hand the connection back between kicks: under the ASGI server it is one of the
                # process's few pooled ones (HITL_DB_POOL_SIZE), and an idle thread must not hold it.
                connections.close_all()
            time.sleep(KICK_INTERVAL)


_kicker = _Kicker()


def _enqueue() -> None:
    _kicker.kick()


def _new_id() -> str:
    from hitl_portal.ids import new_public_id

    return new_public_id("dlv")


# --- Sending: in the django-q2 cluster ----------------------------------------------------------


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
        if connection.features.has_select_for_update_skip_locked:
            due = due.select_for_update(skip_locked=True)
        ids = list(due.values_list("pk", flat=True)[:limit])
        if not ids:
            return []
        Delivery.objects.filter(pk__in=ids, status=DeliveryStatus.PENDING).update(
            next_attempt_at=lease, attempts=F("attempts") + 1
        )
        claimed = list(Delivery.objects.filter(pk__in=ids).select_related("approval__config", "workspace"))
        _write_followups(
            [d.approval for d in claimed if d.event == DeliveryEvent.REQUESTED and d.attempts == 1], now=now
        )
    return claimed


def _write_followups(approvals: list[ApprovalRequest], *, now: datetime) -> None:
    """The reminders and escalations of these requests, if still pending (see deliveries_for_registration).

    ON CONFLICT DO NOTHING on one_delivery_per_event: a request with several notified contacts, or a
    row claimed again, writes each follow-up at most once.
    """
    pending = {a.pk: a for a in approvals if a.effective_status(now) == "pending"}
    rows = []
    for approval, rule in _rules_of(list(pending.values())):
        version = _VERSIONS[(approval.config_id, approval.config_version)]
        rows += followups(approval=approval, rule=rule, version=version, now=now)
    for row in rows:
        row.public_id = _new_id()
    if rows:
        Delivery.objects.bulk_create(rows, ignore_conflicts=True)


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
    if approval is not None and delivery.event in WHILE_PENDING and approval.effective_status(now) != "pending":
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


# --- What a message says ------------------------------------------------------------------------


def review_url(approval: ApprovalRequest) -> str:
    return settings.HITL_BASE_URL + reverse("approvals:detail", args=[approval.public_id])


def act_subject(approval: ApprovalRequest, event: str) -> str:
    """The subject names the act: "Approve: Delete customer T-4821?"."""
    from approvals.presenters import card_title

    title = card_title(approval)
    ask = f"{'Decide' if approval.is_token_cap else 'Approve'}: {title}?"
    if event == DeliveryEvent.REMINDER:
        return f"Reminder — {ask}"
    if event == DeliveryEvent.ESCALATED:
        return f"Escalated — {ask}"
    if event == DeliveryEvent.DECIDED:
        return f"{approval.get_status_display()}: {title}"
    if event == DeliveryEvent.EXPIRED:
        return f"Expired, nobody answered: {title}"
    return ask


def notice_for(*, delivery: Delivery, recipient: Recipient, digest: list[Delivery] = ()) -> Notice:
    from approvals.serializers import approval_as_dict

    source = settings.HITL_BASE_URL
    approval = delivery.approval
    if approval is None:
        return Notice(
            delivery_id=delivery.public_id,
            event=DeliveryEvent.TEST,
            subject=f"Test from HITL Portal: {recipient.name}",
            approval=None,
            review_url=None,
            source=source,
        )
    if len(digest) > 1:
        return Notice(
            delivery_id=delivery.public_id,
            event="digest",
            subject=f"{len(digest)} more requests wait for approval",
            approval=None,
            review_url=settings.HITL_BASE_URL + reverse("approvals:queue"),
            digest=[
                {"subject": act_subject(d.approval, d.event), "review_url": review_url(d.approval)} for d in digest
            ],
            source=source,
        )
    # The row was claimed (with its request) moments ago: the decision is as it now is.
    return Notice(
        delivery_id=delivery.public_id,
        event=delivery.event,
        subject=act_subject(approval, delivery.event),
        approval=approval_as_dict(approval),
        review_url=review_url(approval),
        decide_url=_one_click(delivery=delivery, recipient=recipient),
        facts=_facts(approval),
        source=source,
    )


def _facts(approval: ApprovalRequest) -> list[tuple[str, str]]:
    facts = [("Config", f"{approval.config.public_id}@{approval.config_version} {approval.config.name}")]
    if approval.message:
        facts.append(("Rule says", approval.message))
    if approval.is_token_cap:
        facts.append(("Tokens", f"{approval.tokens_used} of {approval.token_cap} ({approval.scope})"))
    else:
        facts.append(("Target", approval.target))
        if approval.operation:
            facts.append(("Operation", approval.operation))
        if approval.summary:
            facts.append(("Summary", approval.summary))
    facts += [("Run", approval.run_id), ("Caller", approval.caller or "—"), ("Status", approval.effective_status())]
    facts.append(("Expires", approval.expires_at.strftime("%Y-%m-%d %H:%M UTC")))
    return facts


def _one_click(*, delivery: Delivery, recipient: Recipient) -> str | None:
    """A one-click link, only while pending and only for an email address that reviews the workspace."""
    from approvals.links import link_url_for

    if delivery.event not in (DeliveryEvent.REQUESTED, DeliveryEvent.REMINDER, DeliveryEvent.ESCALATED):
        return None
    address = address_of(recipient)
    if not address or delivery.approval.effective_status() != "pending":
        return None
    return link_url_for(delivery=delivery, email=address)
