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
                return model.objects.create(**unique, **fields)
        return model.objects.create(**unique, **fields)
    except IntegrityError:
        return model.objects.get(**unique)
