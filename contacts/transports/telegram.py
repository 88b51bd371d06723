"""Telegram: the request's message with its inline buttons, edited on every resolution.

The work is integrations.telegram_outbound's; this module only adapts it to the transport
interface and Telegram's failures to TransportError, with a 429's retry_after carried to the
outbox's retry. Like Slack, it needs the database while sending (where the request's message is),
so a connection a send opened on the outbox's long-lived threads is closed when it ends.
"""

from django.db import connection

from approvals.models import ApprovalRequest
from integrations import telegram
from integrations.telegram_outbound import telegram_deliver, telegram_digest

from .base import Notice, Recipient, TransportError


class TelegramTransport:
    def notify(self, notice: Notice, recipient: Recipient) -> None:
        opened_here = connection.connection is None
        try:
            self._send(notice, recipient)
        finally:
            if opened_here and not connection.in_atomic_block:
                connection.close()

    def _send(self, notice: Notice, recipient: Recipient) -> None:
        try:
            if notice.digest:
                telegram_digest(channel_ref=recipient.channel_ref, subject=notice.subject, items=notice.digest)
                return
            approval = None
            if notice.approval is not None:
                approval = ApprovalRequest.objects.select_related("config", "workspace").get(
                    public_id=notice.approval["id"]
                )
            telegram_deliver(
                approval=approval, event=notice.event, channel_ref=recipient.channel_ref, contact_id=recipient.id
            )
        except telegram.TelegramError as error:
            raise TransportError(error.message, permanent=error.permanent, retry_after=error.retry_after) from None


TRANSPORT = TelegramTransport()
