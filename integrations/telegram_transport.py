"""Telegram: the request's message with its inline buttons, edited on every resolution.

The work is integrations.telegram_outbound's; this module names it to the chat transport (chat.py);
its failures, TelegramError, carry a 429's retry_after to the outbox's retry.
"""

from contacts.transports.chat import ChatTransport
from integrations.telegram_outbound import telegram_deliver, telegram_digest

TRANSPORT = ChatTransport(deliver=telegram_deliver, digest=telegram_digest)
