"""The notification outbox, writing: delivery rows written in the transaction of the event.

Called by the approval services inside the transaction that makes the event:
`deliveries_for_registration`, `deliveries_for_resolution`; and `delivery_test_create` for the
Contacts tab and API. Each commit wakes the sender (`kick_sender`); the rows are claimed and
sent by contacts.sending, in the words of contacts.messages.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, NamedTuple

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from common.ids import new_public_id
from rules.versions import frozen_versions

from .models import WHILE_PENDING, Channel, Contact, Delivery, DeliveryEvent, DeliveryStatus

if TYPE_CHECKING:
    from approvals.models import ApprovalRequest
    from rules.models import ConfigVersion

logger = logging.getLogger(__name__)

# A burst of events wakes the cluster once per this interval, not once per commit (see _Kicker). Each
# wake is a task stored in the broker (a signed pickle, an INSERT) and the cluster looks at its broker
# once a poll: woken more often, it would only find several tasks to take together.
KICK_INTERVAL = settings.Q_CLUSTER["poll"]
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
    request, in one statement (approvals.engine.insert.insert_request), then calls `kick_sender`.

    The follow-ups (reminders, escalations) are not written here: the sender writes them when it
    first claims the request's `requested` rows (contacts.sending), off the request's path — a
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
        row.public_id = new_delivery_id()
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
    kind: str = "gate"


# A question or a plan belongs to no rule: its version's `questions_notify` names who is told.
QUESTION_KINDS = ("question", "plan")


def questions_rule(version: ConfigVersion) -> dict:
    """The notify policy of a version's questions and plans, shaped like a frozen rule's."""
    return {"notify": list(version.questions_notify or []), "escalate_to": [], "escalate_after_seconds": None}


def deliveries_for_resolution(*, approvals: list[ApprovalRequest | Resolved], event: str) -> int:
    """`decided` or `expired` to each notified contact (and to escalation contacts already told),
    the pending reminders and escalations of those requests dropped and their unsent `requested`
    rows `skipped`: a request decided meanwhile sends none of them. Call inside the resolving transaction.

    A request whose rule tells nobody costs no query here (its frozen version is cached).
    """
    rules = {a.pk: rule for a, rule in rules_of(approvals) if rule["notify"] or rule["escalate_to"]}
    if not rules:
        return 0
    now = timezone.now()
    ids = list(rules)
    Delivery.objects.filter(approval_id__in=ids, event__in=WHILE_PENDING, status=DeliveryStatus.PENDING).delete()
    # A `requested` message not sent yet would only arrive late now (a burst, a halt of thousands). One a
    # sender holds right now is its to finish: waiting for it could deadlock with the follow-ups its
    # claim writes (the rows deleted above).
    unsent = Delivery.objects.filter(approval_id__in=ids, event=DeliveryEvent.REQUESTED, status=DeliveryStatus.PENDING)
    Delivery.objects.filter(pk__in=unsent.select_for_update(skip_locked=True).values("pk")).update(
        status=DeliveryStatus.SKIPPED
    )
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
        version = frozen_versions.get(approval.config_id, approval.config_version)
        names = list(rule["notify"]) + [c for c in rule["escalate_to"] if (approval.pk, c) in told]
        for contact in _contacts(version, list(dict.fromkeys(names))):
            row = _row(approval=approval, contact=contact, event=event, due=now, now=now)
            row.public_id = new_delivery_id()
            rows.append(row)
    if rows:
        Delivery.objects.bulk_create(rows, ignore_conflicts=True)
        kick_sender()
    return len(rows)


def resolution_tells(keys: set[tuple[int, int, str]]) -> set[tuple[int, int, str]]:
    """The (config_id, config_version, rule_id) among `keys` whose frozen rule tells anyone when a
    request resolves. A sweep asks this once per batch, so a batch whose rules tell nobody builds
    nothing per request; no query once the versions are cached."""
    frozen_versions.load({(config_id, number) for config_id, number, rule_id in keys if rule_id})
    tells = set()
    for config_id, number, rule_id in keys:
        version = frozen_versions.get(config_id, number) if rule_id else None
        if version is None:
            rule = None
        elif rule_id in QUESTION_KINDS:  # the sweep's key for a question or plan: its kind
            rule = questions_rule(version)
        else:
            rule = version.rule(rule_id)
        if rule is not None and (rule["notify"] or rule["escalate_to"]):
            tells.add((config_id, number, rule_id))
    return tells


def rules_of(approvals: list[ApprovalRequest | Resolved]) -> list[tuple[ApprovalRequest | Resolved, dict]]:
    """(request, its frozen rule) for each gate request among `approvals` whose version and rule are
    found, and each question or plan with its version's questions_rule; token caps belong to no rule.
    One query for the versions this process has not seen yet."""
    approvals = [a for a in approvals if a.rule_id or a.kind in QUESTION_KINDS]
    frozen_versions.load({(a.config_id, a.config_version) for a in approvals})
    found = []
    for approval in approvals:
        version = frozen_versions.get(approval.config_id, approval.config_version)
        if version is None:
            rule = None
        else:
            rule = questions_rule(version) if approval.kind in QUESTION_KINDS else version.rule(approval.rule_id)
        if rule is not None:
            found.append((approval, rule))
    return found


def followups_write(approvals: list[ApprovalRequest], *, now: datetime) -> None:
    """The reminders and escalations of these requests, if still pending (see deliveries_for_registration):
    the sender writes them when it first claims a request's `requested` rows, in the claim's transaction.

    ON CONFLICT DO NOTHING on one_delivery_per_event: a request with several notified contacts, or a
    row claimed again, writes each follow-up at most once.
    """
    pending = {a.pk: a for a in approvals if a.is_pending(now)}
    rows = []
    for approval, rule in rules_of(list(pending.values())):
        version = frozen_versions.get(approval.config_id, approval.config_version)
        rows += followups(approval=approval, rule=rule, version=version, now=now)
    for row in rows:
        row.public_id = new_delivery_id()
    if rows:
        Delivery.objects.bulk_create(rows, ignore_conflicts=True)


def delivery_test_create(*, contact: Contact) -> Delivery:
    """A `test` event to a draft contact (the Contacts tab's "Send test", the API's …/test)."""
    now = timezone.now()
    with transaction.atomic():
        delivery = Delivery.objects.create(
            public_id=new_delivery_id(),
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

    A process may end right after its commit — the CLI deciding, a script: at exit (`flush`) the
    thread is stopped and a kick it still owes is enqueued before the interpreter goes, rather than
    lost with a daemon thread killed mid-query.
    """

    def __init__(self) -> None:
        self.wanted = threading.Event()
        self.stopping = threading.Event()
        self.thread: threading.Thread | None = None
        self.pid = 0
        self.lock = threading.Lock()

    def kick(self) -> None:
        if self.pid != os.getpid():  # first use in this process (after a fork: threads do not survive it)
            with self.lock:
                if self.pid != os.getpid():
                    self.wanted = threading.Event()
                    self.stopping = threading.Event()
                    self.thread = threading.Thread(target=self._run, name="hitl-outbox-kicker", daemon=True)
                    self.thread.start()
                    self.pid = os.getpid()
                    atexit.register(self.flush)
        self.wanted.set()

    def _run(self) -> None:
        while True:
            self.wanted.wait()
            if self.stopping.is_set():
                return  # flush enqueues what is owed
            self.wanted.clear()
            self._enqueue()
            self.stopping.wait(KICK_INTERVAL)

    def _enqueue(self) -> None:
        from django.db import connections
        from django_q.tasks import async_task

        try:
            async_task("contacts.tasks.send_due", save=False)
        except Exception:  # the minute schedule still sends; say why the kick failed
            logger.exception("Could not enqueue the notification task")
        finally:
            # Hand the connection back between kicks: under the ASGI server it is one of the
            # process's few pooled ones (HITL_DB_POOL_SIZE), and an idle thread must not hold it.
            connections.close_all()

    def flush(self) -> None:
        """At exit: stop the thread, then enqueue here a kick it had not sent yet."""
        if self.pid != os.getpid() or self.thread is None:
            return
        owed = self.wanted.is_set()
        self.stopping.set()
        self.wanted.set()
        self.thread.join(timeout=KICK_INTERVAL + 10)
        if owed:
            self._enqueue()


_kicker = _Kicker()


def _enqueue() -> None:
    _kicker.kick()


def new_delivery_id() -> str:
    return new_public_id("dlv")
