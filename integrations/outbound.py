"""Slack, outbound: post a request's message, bring it up to date, reply in its thread.

The outbox's Slack transport (integrations/slack_transport.py) calls slack_deliver for each event;
the buttons a message carries are answered by integrations.inbound.
"""

from django.utils import timezone

from approvals.models import ApprovalRequest
from contacts.transports.chat import message_of, message_remember

from . import blocks, slack
from .chat_people import claimant
from .models import SlackMessage


def slack_message_post(*, approval: ApprovalRequest, channel: str, contact_id: str = "") -> SlackMessage:
    """Post the request's message to a channel once and remember where it is.

    Safe to run twice: a channel that already has the request's message gets a reply in its thread
    (an escalation or a repeated delivery), never a second set of buttons.
    """
    existing = SlackMessage.objects.filter(approval=approval, channel=channel).first()
    if existing is not None:
        return existing
    return _post(approval=approval, channel=channel, contact_id=contact_id)


def _post(*, approval: ApprovalRequest, channel: str, contact_id: str) -> SlackMessage:
    """slack_message_post, once its caller has found no message of the request in the channel."""
    claimed = claimant(approval)
    answer = slack.call(
        "chat.postMessage",
        channel=channel,
        text=blocks.fallback_text(approval),
        blocks=blocks.request_blocks(approval, claimed),
        unfurl_links=False,
        unfurl_media=False,
    )
    return message_remember(
        SlackMessage,
        unique={"approval": approval, "channel": answer.get("channel") or channel},
        contact_id=contact_id,
        ts=answer["ts"],
        shown_status=approval.effective_status(),
        shown_claim=claimed,
    )


def slack_thread_reply(*, message: SlackMessage, text: str) -> None:
    """A line under the request's message (reminder, escalation): no second set of buttons to keep in step."""
    slack.call("chat.postMessage", channel=message.channel, thread_ts=message.ts, text=text)


def slack_messages_refresh(*, approval: ApprovalRequest, channel: str | None = None) -> int:
    """Bring the request's Slack messages (in one channel, or all) up to date; returns how many changed.

    Called for every resolution and every claim taken or released, wherever it happened. Idempotent: a
    message already showing the request's status and claimant is left alone, and what it shows moves only
    from what was read, so two refreshes racing send Slack the same content at worst.
    """
    approval.refresh_from_db()
    status, claimed = approval.effective_status(), claimant(approval)
    messages = SlackMessage.objects.filter(approval=approval).exclude(shown_status=status, shown_claim=claimed)
    if channel is not None:
        messages = messages.filter(channel=channel)
    changed = 0
    for message in messages:
        slack.call(
            "chat.update",
            channel=message.channel,
            ts=message.ts,
            text=blocks.fallback_text(approval),
            blocks=blocks.request_blocks(approval, claimed),
        )
        changed += SlackMessage.objects.filter(
            pk=message.pk, shown_status=message.shown_status, shown_claim=message.shown_claim
        ).update(shown_status=status, shown_claim=claimed, updated_at=timezone.now())
    return changed


def slack_deliver(*, approval: ApprovalRequest | None, event: str, channel_ref: str, contact_id: str = "") -> None:
    """What one notification event means for a Slack contact (the outbox's Slack transport calls this).

    requested / escalated: the message with its buttons (an escalation to a channel that already has
    it is a reply in its thread); reminder: a reply in the thread; decided / expired: the message
    updated in place, buttons removed; test: a line saying the contact reaches this channel.
    Raises slack.SlackError: `permanent`, or with Slack's `retry_after` for a 429.
    """
    channel = slack.channel_for(channel_ref)
    if approval is None:  # a `test` event belongs to no request
        slack.call("chat.postMessage", channel=channel, text=blocks.test_text())
        return
    existing = message_of(SlackMessage, approval=approval, where="channel", value=channel)
    if existing is None:
        _post(approval=approval, channel=channel, contact_id=contact_id)
    elif event in ("decided", "expired", "requested"):
        slack_messages_refresh(approval=approval, channel=channel)
    else:  # reminder, escalated
        slack_thread_reply(message=existing, text=blocks.nudge_text(approval, event))


def slack_digest(*, channel_ref: str, subject: str, items: list[dict]) -> None:
    """Many requests in one minute for one contact: one message listing them, each a link to its page."""
    channel = slack.channel_for(channel_ref)
    slack.call("chat.postMessage", channel=channel, text=subject, blocks=blocks.digest_blocks(subject, items))
