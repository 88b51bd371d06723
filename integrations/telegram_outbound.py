"""Telegram, outbound: post a request's message, edit it on every resolution, reply to it.

The outbox's Telegram transport (integrations/telegram_transport.py) calls telegram_deliver for each
event; the buttons a message carries are answered by integrations.telegram_inbound.
"""

from django.utils import timezone

from approvals.models import ApprovalRequest
from contacts.transports.chat import message_of, message_remember

from . import telegram, telegram_card
from .chat_people import claimant
from .models import TelegramMessage

HTML = "HTML"


def telegram_message_post(*, approval: ApprovalRequest, chat_id: str, contact_id: str = "") -> TelegramMessage:
    """Post the request's message to a chat once and remember where it is.

    Safe to run twice: a chat that already has the request's message keeps it (an escalation or a
    repeated delivery replies to it), never a second set of buttons.
    """
    existing = TelegramMessage.objects.filter(approval=approval, chat_id=chat_id).first()
    if existing is not None:
        return existing
    return _post(approval=approval, chat_id=chat_id, contact_id=contact_id)


def _post(*, approval: ApprovalRequest, chat_id: str, contact_id: str) -> TelegramMessage:
    """telegram_message_post, once its caller has found no message of the request in the chat."""
    claimed = claimant(approval)
    result = telegram.call(
        "sendMessage",
        chat_id=chat_id,
        text=telegram_card.card_text(approval, claimed),
        parse_mode=HTML,
        reply_markup=telegram_card.keyboard(approval, claimed),
        link_preview_options={"is_disabled": True},
    )
    message_id = result.get("message_id") if isinstance(result, dict) else None
    if not isinstance(message_id, int):
        raise telegram.TelegramError("Telegram answered sendMessage without a message id")
    return message_remember(
        TelegramMessage,
        unique={"approval": approval, "chat_id": chat_id},
        contact_id=contact_id,
        message_id=message_id,
        shown_status=approval.effective_status(),
        shown_claim=claimed,
    )


def telegram_messages_refresh(*, approval: ApprovalRequest, chat_id: str | None = None) -> int:
    """Bring the request's Telegram messages (in one chat, or all) up to date; returns how many changed.

    Called for every resolution, wherever it happened (the `decided` / `expired` deliveries every
    decision and expiry writes), and for every claim taken or released. Idempotent: a message already
    showing the request's status and claimant is left alone, and what it shows moves only from what was read.
    """
    approval.refresh_from_db()
    status, claimed = approval.effective_status(), claimant(approval)
    messages = TelegramMessage.objects.filter(approval=approval).exclude(shown_status=status, shown_claim=claimed)
    if chat_id is not None:
        messages = messages.filter(chat_id=chat_id)
    changed = 0
    for message in messages:
        try:
            telegram.call(
                "editMessageText",
                chat_id=message.chat_id,
                message_id=message.message_id,
                text=telegram_card.card_text(approval, claimed),
                parse_mode=HTML,
                reply_markup=telegram_card.keyboard(approval, claimed),
                link_preview_options={"is_disabled": True},
            )
        except telegram.TelegramError as error:
            # Edited already (a refresh raced this one): Telegram says so, and the message is right.
            if "message is not modified" not in error.description:
                raise
        changed += TelegramMessage.objects.filter(
            pk=message.pk, shown_status=message.shown_status, shown_claim=message.shown_claim
        ).update(shown_status=status, shown_claim=claimed, updated_at=timezone.now())
    return changed


def telegram_deliver(*, approval: ApprovalRequest | None, event: str, channel_ref: str, contact_id: str = "") -> None:
    """What one notification event means for a Telegram contact (the outbox's transport calls this).

    requested / escalated: the message with its buttons (an escalation to a chat that already has it
    is a reply to it); reminder: a reply; decided / expired: the message edited, buttons removed;
    test: a line saying the contact reaches this chat. Raises telegram.TelegramError.
    """
    chat_id = telegram.chat_for(channel_ref)
    if approval is None:  # a `test` event belongs to no request
        telegram.call("sendMessage", chat_id=chat_id, text=telegram_card.test_text())
        return
    existing = message_of(TelegramMessage, approval=approval, where="chat_id", value=chat_id)
    if existing is None:
        _post(approval=approval, chat_id=chat_id, contact_id=contact_id)
    elif event in ("decided", "expired", "requested"):
        telegram_messages_refresh(approval=approval, chat_id=chat_id)
    else:  # reminder, escalated
        telegram.call(
            "sendMessage",
            chat_id=chat_id,
            text=telegram_card.nudge_text(approval, event),
            parse_mode=HTML,
            reply_parameters={"message_id": existing.message_id, "allow_sending_without_reply": True},
        )


def telegram_digest(*, channel_ref: str, subject: str, items: list[dict]) -> None:
    """Many requests in one minute for one contact: one message listing them, each a link to its page."""
    chat_id = telegram.chat_for(channel_ref)
    telegram.call(
        "sendMessage",
        chat_id=chat_id,
        text=telegram_card.digest_text(subject, items),
        parse_mode=HTML,
        link_preview_options={"is_disabled": True},
    )
