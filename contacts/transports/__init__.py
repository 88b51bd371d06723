"""Channels as a registry of small transport modules with one interface (STYLE.md, healthchecks).

A transport takes a `Notice` — what to say, already rendered from the request — and a
`Recipient` — the frozen contact — and either returns (sent) or raises `TransportError`. A new
channel is one more module with one `TRANSPORT`, added by its app when Django starts
(`transport_add` in its AppConfig.ready): email and webhooks here, Slack and Telegram in
integrations/, Web Push in push/ — the apps above contacts, which contacts never import.
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
    "transport_add",
    "transport_for",
]

TRANSPORTS: dict[str, Transport] = {}


def transport_add(channel: str, transport: Transport) -> None:
    """The channel's transport, added once by the app that implements it (its AppConfig.ready)."""
    TRANSPORTS[channel] = transport


def transport_for(channel: str) -> Transport | None:
    return TRANSPORTS.get(channel)


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
