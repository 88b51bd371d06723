"""Email: Django's mail with SMTP settings from the environment; a plain-text and an HTML part."""

import smtplib

from django.core.mail import EmailMultiAlternatives, get_connection
from django.template.loader import render_to_string

from .base import Notice, Recipient, TransportError, resolve


class EmailTransport:
    def notify(self, notice: Notice, recipient: Recipient) -> None:
        address = resolve(recipient.channel_ref)
        context = {"notice": notice, "recipient": recipient}
        message = EmailMultiAlternatives(
            subject=notice.subject,
            body=render_to_string("contacts/email/notice.txt", context),
            to=[address],
            headers={"X-HITL-Delivery": notice.delivery_id},  # receivers deduplicate a repeated send
            connection=get_connection(),
        )
        message.attach_alternative(render_to_string("contacts/email/notice.html", context), "text/html")
        # Messages name the failure, never the address.
        try:
            message.send()
        except smtplib.SMTPRecipientsRefused:
            raise TransportError(
                f"the mail server refused the address in {recipient.channel_ref}", permanent=True
            ) from None
        except smtplib.SMTPResponseException as refused:
            code = refused.smtp_code
            raise TransportError(f"SMTP {code} from the mail server", permanent=500 <= code < 600) from None
        except (smtplib.SMTPException, OSError):
            raise TransportError("could not reach the mail server") from None


TRANSPORT = EmailTransport()
