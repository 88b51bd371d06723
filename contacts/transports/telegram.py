"""Telegram: the request's message with its inline buttons, edited on every resolution.

The work is integrations.telegram_outbound's; this module only names it, and Telegram's failures,
to the chat transport (chat.py), which carries a 429's retry_after to the outbox's retry.
"""

from integrations import telegram
from integrations.telegram_outbound import telegram_deliver, telegram_digest

from .chat import ChatTransport

TRANSPORT = ChatTransport(deliver=telegram_deliver, digest=telegram_digest, error=telegram.TelegramError)
