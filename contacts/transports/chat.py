"""What the chat channels (Slack, Telegram) share as transports: a message per request, kept in step.

Each chat posts a request's card, then replies to or edits it as the request moves on; its own
module does that work (`deliver`, `digest`) and fails with its own TransportError (SlackError,
TelegramError: a message, whether it is permanent, a 429's retry_after). This adapts the pair to the
transport interface.

Unlike email and webhooks, a chat needs the database while sending (where the request's message is,
to update it; where a new one was posted, to remember it). The outbox sends on threads that live as
long as the worker, so a connection a send opened is closed when it ends, never left idle.
"""

from collections.abc import Callable

from django.db import connection

from approvals.models import ApprovalRequest

from .base import Notice, Recipient


class ChatTransport:
    def __init__(self, *, deliver: Callable, digest: Callable) -> None:
        self.deliver, self.digest = deliver, digest

    def notify(self, notice: Notice, recipient: Recipient) -> None:
        opened_here = connection.connection is None
        try:
            self._send(notice, recipient)
        finally:
            if opened_here and not connection.in_atomic_block:
                connection.close()

    def _send(self, notice: Notice, recipient: Recipient) -> None:
        if notice.digest:
            self.digest(channel_ref=recipient.channel_ref, subject=notice.subject, items=notice.digest)
            return
        approval = None
        if notice.approval is not None:
            approval = ApprovalRequest.objects.select_related("config", "workspace").get(
                public_id=notice.approval["id"]
            )
        self.deliver(approval=approval, event=notice.event, channel_ref=recipient.channel_ref, contact_id=recipient.id)
