"""Slack: the request's message with its buttons, kept in step with the request until it resolves.

The work is integrations.outbound.slack_deliver's (post, thread reply, update in place); this
module only names it, and Slack's failures, to the chat transport (chat.py), which carries
Slack's 429 Retry-After to the outbox's retry.
"""

from integrations import slack
from integrations.outbound import slack_deliver, slack_digest

from .chat import ChatTransport

TRANSPORT = ChatTransport(deliver=slack_deliver, digest=slack_digest, error=slack.SlackError)
