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
