"""Slack, events: a person's reply in the thread under a request's message is a comment on that request.

The thread names its parent by channel and ts, which together name exactly one message the outbox posted
(integrations.models.SlackMessage), so exactly one request — of the portal workspace whose contact it was
posted for. The replier comments as the member Slack's email says they are (the lookup a button press
uses), only if they may review that request's workspace: a thread of one workspace's request never
comments on another's. The comment goes through collaboration's one `comment_add` and never decides.
Someone whose replies cannot be comments (Slack shows no email for them, they review no such workspace) is
told why once per thread, not under every reply.
"""

import logging
from datetime import timedelta

from django.db import IntegrityError, transaction

from collaboration.models import CommentVia
from collaboration.services import comment_add
from common.exceptions import DomainError

from .chat_people import may_press
from .inbound import slack_member, slack_whisper
from .models import SlackEventSeen, SlackMessage, SlackThreadTold
from .replays import first_time

logger = logging.getLogger(__name__)

# Slack retries an unanswered event three times within the hour; a day is well past the last one.
REMEMBER_EVENTS = timedelta(days=1)
# A plain reply, or one also sent to the channel; edits, deletions, joins and bots' posts are not comments.
PEOPLE_SUBTYPES = (None, "thread_broadcast")
NOT_ADDED = "Your reply was not added as a comment on {apr} in the HITL portal"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def slack_event(*, envelope: dict) -> None:
    """One `event_callback`, signed by Slack: a reply under a request's message becomes a comment."""
    event = envelope.get("event")
    if not isinstance(event, dict) or event.get("type") != "message":
        return
    if event.get("subtype") not in PEOPLE_SUBTYPES or event.get("bot_id") or event.get("bot_profile"):
        return  # our own posts and other apps' carry bot_id; an edit or a deletion is a subtype
    channel, thread_ts, ts = _text(event.get("channel")), _text(event.get("thread_ts")), _text(event.get("ts"))
    slack_user, text = _text(event.get("user")), _plain(_text(event.get("text")))
    if not (channel and thread_ts and slack_user and text.strip()) or thread_ts == ts:
        return  # not a reply in a thread (a thread's first message has its own ts as thread_ts)
    parent = SlackMessage.objects.select_related("approval__workspace").filter(channel=channel, ts=thread_ts).first()
    if parent is None:
        return  # a thread under anything but a request's message
    if not event_first_time(_text(envelope.get("event_id"))):
        return  # Slack's retry of an event already acted on
    approval = parent.approval
    user, email, why = slack_member(slack_user)
    not_added = NOT_ADDED.format(apr=approval.public_id)
    if why:
        if told_first_time(parent, slack_user):
            slack_whisper(channel=channel, user=slack_user, thread_ts=thread_ts, text=f"{not_added}: {why}")
        return
    if not may_press(user, approval):
        if told_first_time(parent, slack_user):
            slack_whisper(
                channel=channel,
                user=slack_user,
                thread_ts=thread_ts,
                text=f"{not_added}: {email} is not a reviewer of {approval.workspace.name} there. Replies in "
                "this thread become comments when the portal knows you by your Slack email.",
            )
        return
    try:
        comment_add(approval=approval, user=user, text=text, via=CommentVia.SLACK)
    except DomainError as refused:  # empty once trimmed, too long: the comment rules' own words
        slack_whisper(channel=channel, user=slack_user, thread_ts=thread_ts, text=f"{not_added}: {refused.message}")


def told_first_time(parent: SlackMessage, slack_user: str) -> bool:
    """Record that this Slack user is told, under this request's message, why their replies are not comments;
    False if they were told before (a note per thread, not per reply; the unique key holds it under a race)."""
    try:
        with transaction.atomic():
            SlackThreadTold.objects.create(message=parent, slack_user=slack_user[:32])
    except IntegrityError:
        return False
    return True


def event_first_time(event_id: str) -> bool:
    """Record an event_id; False if it was acted on before (Slack's retry, or a replay of a signed event)."""
    return bool(event_id) and first_time(SlackEventSeen, REMEMBER_EVENTS, event_id=event_id)


def _plain(text: str) -> str:
    """What the person typed: Slack escapes &, < and > in a message's text (and only those)."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
