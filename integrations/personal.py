"""Telling one person about their own account, on every channel they set up: email, push, Telegram.

Security notices (a passkey added or removed) go to the person, not to a workspace's contacts: whoever
holds the account learns of a change wherever they are, also when a stolen session made it. Each
channel is tried on its own; one that fails is logged by kind, never by address, and the others still go.
"""

import logging
import smtplib
from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.mail import EmailMessage

from push.models import PushSubscription
from push.services import Message, PushFailed, push_send

from . import telegram
from .models import TelegramAccount

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Notice:
    subject: str
    text: str
    url: str  # the page where the person can see and undo what happened


def person_tell(*, user: AbstractBaseUser, notice: Notice) -> list[str]:
    """Send `notice` to `user` by email, to each browser they subscribed, and to their linked Telegram; the
    channels it reached."""
    reached = []
    if user.email:
        try:
            EmailMessage(subject=notice.subject, body=f"{notice.text}\n\n{notice.url}\n", to=[user.email]).send()
            reached.append("email")
        except (smtplib.SMTPException, OSError):
            log.warning("account notice: the mail server did not take the message for user %s", user.pk)
    seen = set()
    for subscription in PushSubscription.objects.filter(user=user).order_by("pk"):
        if subscription.endpoint in seen:  # one browser subscribed in two workspaces hears it once
            continue
        seen.add(subscription.endpoint)
        try:
            push_send(subscription=subscription, message=Message(notice.subject, notice.text, notice.url, "account"))
            reached.append("push")
        except PushFailed as failed:
            log.warning("account notice: push to a browser of user %s failed: %s", user.pk, failed.message)
    account = TelegramAccount.objects.filter(user=user).first()
    if account is not None:
        try:
            telegram.call("sendMessage", chat_id=account.telegram_user_id, text=f"{notice.text}\n{notice.url}")
            reached.append("telegram")
        except telegram.TelegramError as failed:
            log.warning("account notice: Telegram to user %s failed: %s", user.pk, failed)
    return reached
