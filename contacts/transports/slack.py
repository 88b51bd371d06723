"""Slack: the request's message with its buttons, kept in step with the request until it resolves.

The work is integrations.outbound.slack_deliver's (post, thread reply, update in place); this
module only adapts it to the transport interface and Slack's failures to TransportError, with
Slack's 429 Retry-After carried to the outbox's retry.

Unlike email and webhooks, Slack needs the database while sending (where the request's message
is, to update it; where a new one was posted, to remember it). The outbox sends on threads that
live as long as the worker, so a connection a send opened is closed when it ends, never left idle.
"""

from django.db import connection

from approvals.models import ApprovalRequest
from integrations import slack
from integrations.outbound import slack_deliver, slack_digest

from .base import Notice, Recipient, TransportError


class SlackTransport:
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
                slack_digest(channel_ref=recipient.channel_ref, subject=notice.subject, items=notice.digest)
                return
            approval = None
            if notice.approval is not None:
                approval = ApprovalRequest.objects.select_related("config", "workspace").get(
                    public_id=notice.approval["id"]
                )
            slack_deliver(
                approval=approval, event=notice.event, channel_ref=recipient.channel_ref, contact_id=recipient.id
            )
        except slack.SlackError as error:
            raise TransportError(error.message, permanent=error.permanent, retry_after=error.retry_after) from None


TRANSPORT = SlackTransport()
