"""Telling one person, on every channel they set up: email, push, Telegram — not a workspace's contacts.

Security notices (a passkey added or removed) go to the person alone: whoever holds the account learns of a
change wherever they are, also when a stolen session made it, and nobody else can act on it. A notice about
work in a workspace (how a request asked for them ended) reaches whoever stands in for them there too
(docs/people.md, Delegation), on the stand-in's own channels. Each channel is tried on its own; one that
fails is logged by kind, never by address, and the others still go.
"""

import logging
import smtplib
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.core.mail import EmailMessage

from people.selectors import delegate_ids_for
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


@dataclass
class _Told:
    """Who heard a notice already, by channel: one person reached twice (a browser both subscribed, a
    stand-in who is also told in their own right) hears it once."""

    emails: set[str] = field(default_factory=set)
    endpoints: set[str] = field(default_factory=set)
    telegram_ids: set[int] = field(default_factory=set)


def recipients(*, user: AbstractBaseUser, workspace_id: int | None) -> list[AbstractBaseUser]:
    """Who hears `user`'s personal notice: the person, then — for a notice about work in a workspace — whoever
    stands in for them there right now (people.selectors.delegate_ids_for, the reading the rule's push
    notifications use too). A notice about the account itself (no workspace) is the person's alone."""
    if workspace_id is None:
        return [user]
    delegate_ids = delegate_ids_for(workspace_id=workspace_id, delegator_ids={user.pk}) - {user.pk}
    return [user, *get_user_model().objects.filter(pk__in=delegate_ids).order_by("email")]


def person_tell(*, user: AbstractBaseUser, notice: Notice, workspace_id: int | None = None) -> list[str]:
    """Send `notice` to `user` by email, to each browser they subscribed, and to their linked Telegram — and,
    when it is about work in `workspace_id`, to their live stand-ins on theirs; the channels it reached
    (`email`, …; `email to bob@acme.test`, … for a stand-in)."""
    told = _Told()
    reached = _tell(person=user, notice=notice, told=told)
    for delegate in recipients(user=user, workspace_id=workspace_id)[1:]:
        standing_in = Notice(
            subject=f"For {user.email}: {notice.subject}",
            text=f"You stand in for {user.email}, so this reaches you too.\n{notice.text}",
            url=notice.url,
        )
        reached += [f"{kind} to {delegate.email}" for kind in _tell(person=delegate, notice=standing_in, told=told)]
    return reached


def _tell(*, person: AbstractBaseUser, notice: Notice, told: _Told) -> list[str]:
    """One person's channels, each tried on its own; any already told this notice is skipped."""
    reached = []
    if person.email and person.email.casefold() not in told.emails:
        told.emails.add(person.email.casefold())
        try:
            EmailMessage(subject=notice.subject, body=f"{notice.text}\n\n{notice.url}\n", to=[person.email]).send()
            reached.append("email")
        except (smtplib.SMTPException, OSError):
            log.warning("personal notice: the mail server did not take the message for user %s", person.pk)
    pushed = False
    for subscription in PushSubscription.objects.filter(user=person).order_by("pk"):
        if subscription.endpoint in told.endpoints:  # one browser subscribed in two workspaces hears it once
            continue
        told.endpoints.add(subscription.endpoint)
        try:
            push_send(subscription=subscription, message=Message(notice.subject, notice.text, notice.url, "account"))
            pushed = True
        except PushFailed as failed:
            log.warning("personal notice: push to a browser of user %s failed: %s", person.pk, failed.message)
    reached += ["push"] if pushed else []
    account = TelegramAccount.objects.filter(user=person).first()
    if account is not None and account.telegram_user_id not in told.telegram_ids:
        told.telegram_ids.add(account.telegram_user_id)
        try:
            telegram.call("sendMessage", chat_id=account.telegram_user_id, text=f"{notice.text}\n{notice.url}")
            reached.append("telegram")
        except telegram.TelegramError as failed:
            log.warning("personal notice: Telegram to user %s failed: %s", person.pk, failed)
    return reached
