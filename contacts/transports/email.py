"""Email: Django's mail with SMTP settings from the environment; a plain-text and an HTML part.

Each send thread keeps its SMTP connection open from one message to the next, as it keeps its HTTP
sessions: a connection, greeting and QUIT per message cost more than the message. The sender
closes it when its run ends (`release`, called on every send thread by contacts.sending).
"""

import smtplib
import threading

from django.core.mail import EmailMultiAlternatives, get_connection
from django.template.loader import render_to_string

from .base import Notice, Recipient, TransportError, resolve

_local = threading.local()


def _connection():
    """This thread's mail connection, opened if it is not (the backend's open() is a no-op when it is)."""
    if getattr(_local, "connection", None) is None:
        _local.connection = get_connection()
    _local.connection.open()
    return _local.connection


def release() -> None:
    """Close this thread's mail connection, if it has one; the next message opens another."""
    connection, _local.connection = getattr(_local, "connection", None), None
    if connection is not None:
        try:
            connection.close()
        except (smtplib.SMTPException, OSError):  # already dropped by the server: nothing to hand back
            pass


class EmailTransport:
    def notify(self, notice: Notice, recipient: Recipient) -> None:
        address = resolve(recipient.channel_ref)
        context = {"notice": notice, "recipient": recipient}
        message = EmailMultiAlternatives(
            subject=notice.subject,
            body=render_to_string("contacts/email/notice.txt", context),
            to=[address],
            headers={"X-HITL-Delivery": notice.delivery_id},  # receivers deduplicate a repeated send
        )
        message.attach_alternative(render_to_string("contacts/email/notice.html", context), "text/html")
        # Messages name the failure, never the address.
        try:
            self._send(message)
        except smtplib.SMTPRecipientsRefused:
            raise TransportError(
                f"the mail server refused the address in {recipient.channel_ref}", permanent=True
            ) from None
        except smtplib.SMTPResponseException as refused:
            release()  # the session may be in any state: the next message starts a new one
            code = refused.smtp_code
            raise TransportError(f"SMTP {code} from the mail server", permanent=500 <= code < 600) from None
        except (smtplib.SMTPException, OSError):
            release()
            raise TransportError("could not reach the mail server") from None

    def _send(self, message: EmailMultiAlternatives) -> None:
        try:
            message.connection = _connection()
            message.send()
        except smtplib.SMTPServerDisconnected:
            # A kept connection the server closed while it was idle: once more, on a new one.
            release()
            message.connection = _connection()
            message.send()


TRANSPORT = EmailTransport()
