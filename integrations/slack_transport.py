"""Slack: the request's message with its buttons, kept in step with the request until it resolves.

The work is integrations.outbound.slack_deliver's (post, thread reply, update in place); this
module names it to the chat transport (chat.py); its failures, SlackError, carry Slack's 429
Retry-After to the outbox's retry.
"""

from contacts.transports.chat import ChatTransport
from integrations.outbound import slack_deliver, slack_digest

TRANSPORT = ChatTransport(deliver=slack_deliver, digest=slack_digest)
