"""What the chat channels (Slack, Telegram) share as transports: a message per request, kept in step.

Each chat posts a request's card, then replies to or edits it as the request moves on; its own
module does that work (`deliver`, `digest`) and fails with its own TransportError (SlackError,
TelegramError: a message, whether it is permanent, a 429's retry_after). This adapts the pair to the
transport interface.

Unlike email and webhooks, a chat needs the database while sending (where the request's message is,
to update it; where a new one was posted, to remember it), on the outbox's send threads: the
connection a send opens is the sender's to hand back (contacts.sending), kept for the next send.
"""

from collections.abc import Callable

from django.db import IntegrityError, connection, transaction
from django.db.models import Model

from contacts.batch import batch_requests, shared

from .base import Notice, Recipient


class ChatTransport:
    def __init__(self, *, deliver: Callable, digest: Callable) -> None:
        self.deliver, self.digest = deliver, digest

    def notify(self, notice: Notice, recipient: Recipient) -> None:
        if notice.digest:
            self.digest(channel_ref=recipient.channel_ref, subject=notice.subject, items=notice.digest)
            return
        self.deliver(
            approval=notice.request, event=notice.event, channel_ref=recipient.channel_ref, contact_id=recipient.id
        )


def message_of(model: type[Model], *, approval, where: str, value: str) -> Model | None:
    """The request's recorded message where `where` (the model's channel or chat field) is `value`, if any.

    In an outbox batch one query reads the messages of all the batch's requests (contacts.batch), and
    message_remember adds each one a send of the batch records, so a later send of the batch sees it.
    """
    requests = batch_requests()
    if not requests or approval.pk not in requests:
        return model.objects.filter(approval=approval, **{where: value}).first()
    return _batch_messages(model, where, requests).get((approval.pk, value))


def _batch_messages(model: type[Model], where: str, requests: frozenset[int]) -> dict:
    def read() -> dict:
        rows = model.objects.filter(approval_id__in=requests).order_by("-pk")  # the first of a place wins
        return {(row.approval_id, getattr(row, where)): row for row in rows}

    return shared(("chat_messages", model, where), read)


def message_remember(model: type[Model], *, unique: dict, **fields) -> Model:
    """Record where a chat message of a request was posted (`unique`: its request and channel or chat),
    or, when a parallel delivery recorded one there first, that one (the first is kept).

    On the outbox's send threads (autocommit) the INSERT is a statement of its own: a unique
    violation leaves nothing to roll back, so it needs no BEGIN / COMMIT around it. Inside a
    caller's transaction it gets a savepoint, so the violation does not end that transaction.
    """
    try:
        if connection.in_atomic_block:
            with transaction.atomic():
                message = model.objects.create(**unique, **fields)
        else:
            message = model.objects.create(**unique, **fields)
    except IntegrityError:
        message = model.objects.get(**unique)
    requests = batch_requests()
    if requests and message.approval_id in requests:
        (where,) = (key for key in unique if key != "approval")
        _batch_messages(model, where, requests).setdefault((message.approval_id, unique[where]), message)
    return message
