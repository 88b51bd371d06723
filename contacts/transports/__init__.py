"""Channels as a registry of small transport modules with one interface (STYLE.md, healthchecks).

A transport takes a `Notice` — what to say, already rendered from the request — and a
`Recipient` — the frozen contact — and either returns (sent) or raises `TransportError`. A new
channel (Slack, issue 11) is one more module here and one line in `TRANSPORTS`.
"""

from .base import Notice, Recipient, Transport, TransportError, resolve

__all__ = [
    "Notice",
    "Recipient",
    "Transport",
    "TransportError",
    "address_of",
    "release",
    "resolve",
    "transport_for",
]


def transport_for(channel: str) -> Transport | None:
    from . import email, push, slack, telegram, webhook

    return {
        "webhook": webhook.TRANSPORT,
        "email": email.TRANSPORT,
        "slack": slack.TRANSPORT,
        "push": push.TRANSPORT,
        "telegram": telegram.TRANSPORT,
    }.get(channel)


def release() -> None:
    """Close what this thread's sends keep open between messages (its SMTP connection); HTTP sessions
    stay, as idle keep-alive connections cost the far side nothing it has not chosen to keep."""
    from . import email

    email.release()


def address_of(recipient: Recipient) -> str | None:
    """The resolved address of an email contact (to map it to a reviewer), or None."""
    if recipient.channel != "email":
        return None
    try:
        return resolve(recipient.channel_ref)
    except TransportError:
        return None
