"""Telegram, inbound: a button on a request's message, a reason replied to the bot's prompt, a reply to the
request's message itself (a comment), a link code.

Deciding goes through approvals.review.decide.approval_decide, the one decide service every channel uses,
so "decided once", quorum, four eyes and the reason's limit hold in Telegram exactly as elsewhere.
A refusal is told to the person — an alert on their button press (answerCallbackQuery) or a reply
in the chat — never an error to Telegram.
"""

import html
import logging
from datetime import timedelta

from django.contrib.auth.base_user import AbstractBaseUser
from django.utils import timezone

from approvals.models import ApprovalRequest
from approvals.presenters.facts import ASKS_REASON, decided_line
from approvals.review.decide import DECISIONS, approval_decide
from collaboration.models import CommentVia
from collaboration.services import comment_add
from common.exceptions import DomainError

from . import telegram, telegram_card
from .chat_claims import chat_claim
from .chat_people import NOTHING_DECIDED, already_words, approval_pressed, may_press
from .models import TelegramAccount, TelegramMessage, TelegramReasonPrompt, TelegramUpdateSeen
from .replays import first_time
from .telegram_accounts import LinkRefused, telegram_account_link

logger = logging.getLogger(__name__)

# A message (a reason, a link code) that reaches us later than this was held up somewhere: refused.
MESSAGE_WINDOW = timedelta(minutes=5)
# Telegram keeps an undelivered update at most a day: an update_id older than that never comes back.
REMEMBER_UPDATES = timedelta(days=1)
HTML = "HTML"


def update_first_time(update_id: int) -> bool:
    """Record an update_id; False if it was received before (a replay, or Telegram's retry of one handled)."""
    return first_time(TelegramUpdateSeen, REMEMBER_UPDATES, update_id=update_id)


UNLINKED = "The HITL portal does not know this Telegram account: link it on your account page in the portal first."


def reviewer_for(*, telegram_user_id: int, approval: ApprovalRequest) -> tuple[AbstractBaseUser | None, str]:
    """The portal member this Telegram user linked, if they may decide the request; else (None, why not)."""
    account = TelegramAccount.objects.select_related("user").filter(telegram_user_id=telegram_user_id).first()
    if account is None:
        return None, f"{UNLINKED} {NOTHING_DECIDED}"
    user = account.user
    if not may_press(user, approval):
        return None, (
            f"{user.email} is not a reviewer of {approval.workspace.name} in the HITL portal, so you cannot decide "
            f"this request. {NOTHING_DECIDED}"
        )
    return user, ""


def _decide(*, approval: ApprovalRequest, user, decision: str, reason: str) -> tuple[bool, str]:
    """(decided by this call, what to tell the person)."""
    try:
        approval, already = approval_decide(approval=approval, user=user, decision=decision, reason=reason)
    except DomainError as refused:
        # Whatever the one decide service refuses (four eyes, a reason too long, a passkey it needs),
        # the person is told its reason, as the API would.
        return False, f"{refused.message.rstrip('.')}. {NOTHING_DECIDED}"
    # The message itself is edited by the outbox: approval_decide wrote a `decided` delivery for every
    # contact of the rule, as for a decision made anywhere else.
    if already:
        return False, already_words(approval)
    if approval.is_pending():  # a quorum vote: recorded, the request still waits for others
        return True, f"Your approval is recorded; {approval.public_id} needs {approval.approvals_required} in all."
    return True, decided_line(approval, already=False)


# --- Updates --------------------------------------------------------------------------------------


def telegram_update(*, update: dict) -> None:
    """One update from the webhook, already known to be Telegram's and seen for the first time."""
    if isinstance(update.get("callback_query"), dict):
        _button(update["callback_query"])
    elif isinstance(update.get("message"), dict):
        _message(update["message"])


def _from_id(thing: dict) -> int | None:
    sender = thing.get("from")
    value = sender.get("id") if isinstance(sender, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _chat_id(message: dict) -> str:
    chat = message.get("chat") if isinstance(message.get("chat"), dict) else {}
    value = chat.get("id")
    return str(value) if isinstance(value, int | str) and not isinstance(value, bool) else ""


def _answer(query: dict, text: str = "", *, alert: bool = False) -> None:
    """answerCallbackQuery: ends the button's spinner; `alert` shows `text` as a dialog. Best effort."""
    try:
        telegram.call(
            "answerCallbackQuery",
            timeout=telegram.INTERACTIVE_TIMEOUT_SECONDS,
            callback_query_id=str(query.get("id") or ""),
            text=text[:200],  # Telegram's limit for an answer's text
            show_alert=alert,
        )
    except telegram.TelegramError as error:
        logger.warning("Could not answer a Telegram button press: %s", error.message)


def _say(chat_id: str, text: str, *, reply_to: int | None = None) -> None:
    """A message in the chat (plain words, escaped); best effort."""
    params = {"chat_id": chat_id, "text": html.escape(text, quote=False), "parse_mode": HTML}
    if reply_to is not None:
        params["reply_parameters"] = {"message_id": reply_to, "allow_sending_without_reply": True}
    try:
        telegram.call("sendMessage", timeout=telegram.INTERACTIVE_TIMEOUT_SECONDS, **params)
    except telegram.TelegramError as error:
        logger.warning("Could not tell a Telegram user: %s", error.message)


def _button(query: dict) -> None:
    parsed = telegram_card.parse_callback(str(query.get("data") or ""))
    if parsed is None or parsed[0] not in (*DECISIONS, telegram_card.CLAIM):
        _answer(query)  # not one of our buttons: stop the spinner, nothing to do
        return
    decision, public_id = parsed
    approval = approval_pressed(public_id)
    if approval is None:
        _answer(query, f"This request is not in the HITL portal any more. {NOTHING_DECIDED}", alert=True)
        return
    presser = _from_id(query)
    user, why_not = reviewer_for(telegram_user_id=presser, approval=approval) if presser else (None, NOTHING_DECIDED)
    if user is None:
        _answer(query, why_not, alert=True)
        return
    if not approval.is_pending():
        _answer(query, already_words(approval), alert=True)
        return
    if decision == telegram_card.CLAIM:  # "I'm on it": the card names the claimant once it refreshes
        claimed, text = chat_claim(approval=approval, user=user)
        _answer(query, text, alert=not claimed)
        return
    if decision in ASKS_REASON:
        _ask_reason(query=query, approval=approval, decision=decision, presser=presser)
        return
    decided, text = _decide(approval=approval, user=user, decision=decision, reason="")
    _answer(query, text, alert=not decided)


def _ask_reason(*, query: dict, approval: ApprovalRequest, decision: str, presser: int) -> None:
    """Reject / Stop the run: the bot asks for the reason in a reply (ForceReply) to the presser."""
    card = query.get("message") if isinstance(query.get("message"), dict) else {}
    chat_id = _chat_id(card)
    if not chat_id:
        _answer(query, f"Telegram did not say which chat this is; press again. {NOTHING_DECIDED}", alert=True)
        return
    sender = query.get("from") or {}
    mention = f'<a href="tg://user?id={presser}">{html.escape(str(sender.get("first_name") or "you"))}</a>'
    params = {
        "chat_id": chat_id,
        "text": f"{mention}, {telegram_card.reason_prompt(approval, decision)}",
        "parse_mode": HTML,
        # selective: in a group, only the mentioned presser gets the reply box.
        "reply_markup": {"force_reply": True, "selective": True, "input_field_placeholder": "Reason"},
    }
    if isinstance(card.get("message_id"), int):
        params["reply_parameters"] = {"message_id": card["message_id"], "allow_sending_without_reply": True}
    try:
        sent = telegram.call("sendMessage", timeout=telegram.INTERACTIVE_TIMEOUT_SECONDS, **params)
    except telegram.TelegramError as error:
        logger.warning("Could not ask for a reason on %s: %s", approval.public_id, error.message)
        _answer(query, f"Telegram could not ask for your reason; press again. {NOTHING_DECIDED}", alert=True)
        return
    prompt_id = sent.get("message_id") if isinstance(sent, dict) else None
    if not isinstance(prompt_id, int):
        _answer(
            query, f"Telegram did not say where it asked for your reason; press again. {NOTHING_DECIDED}", alert=True
        )
        return
    TelegramReasonPrompt.objects.update_or_create(
        chat_id=chat_id,
        message_id=prompt_id,
        defaults={"approval": approval, "decision": decision, "telegram_user_id": presser},
    )
    _answer(query, "Reply to the bot's message with your reason.")


def _message(message: dict) -> None:
    chat_id = _chat_id(message)
    sender = _from_id(message)
    text = message.get("text") if isinstance(message.get("text"), str) else ""
    if not chat_id or sender is None or not text:
        return
    date = message.get("date")
    if not isinstance(date, int) or timezone.now().timestamp() - date > MESSAGE_WINDOW.total_seconds():
        _say(
            chat_id,
            f"This message reached the HITL portal too late (over 5 minutes); send it again. {NOTHING_DECIDED}",
            reply_to=message.get("message_id") if isinstance(message.get("message_id"), int) else None,
        )
        return
    replied = message.get("reply_to_message") if isinstance(message.get("reply_to_message"), dict) else None
    if replied is not None and isinstance(replied.get("message_id"), int):
        prompt = TelegramReasonPrompt.objects.filter(chat_id=chat_id, message_id=replied["message_id"]).first()
        if prompt is not None:
            _reason(prompt=prompt, message=message, sender=sender, text=text)
            return
        card = (
            TelegramMessage.objects.select_related("approval__workspace")
            .filter(chat_id=chat_id, message_id=replied["message_id"])
            .first()
        )
        if card is not None and not (message.get("from") or {}).get("is_bot"):
            _comment(card=card, message=message, sender=sender, text=text)
            return
    chat = message.get("chat") or {}
    if chat.get("type") == "private":
        _link(chat_id=chat_id, message=message, sender=sender, text=text)


def _reason(*, prompt: TelegramReasonPrompt, message: dict, sender: int, text: str) -> None:
    reply_to = message.get("message_id") if isinstance(message.get("message_id"), int) else None
    if sender != prompt.telegram_user_id:
        _say(
            prompt.chat_id,
            f"Only the person who pressed the button gives its reason. {NOTHING_DECIDED}",
            reply_to=reply_to,
        )
        return
    approval = approval_pressed(prompt.approval.public_id)
    user, why_not = reviewer_for(telegram_user_id=sender, approval=approval)
    if user is None:
        _say(prompt.chat_id, why_not, reply_to=reply_to)
        return
    decided, said = _decide(approval=approval, user=user, decision=prompt.decision, reason=text.strip())
    if decided or not approval.is_pending():
        TelegramReasonPrompt.objects.filter(pk=prompt.pk).delete()
    _say(prompt.chat_id, said, reply_to=reply_to)


def _comment(*, card: TelegramMessage, message: dict, sender: int, text: str) -> None:
    """A reply to the request's message: the linked member's comment on it (collaboration's one comment_add),
    never a decision; the member must review the request's workspace, as for a button press."""
    approval = card.approval
    reply_to = message.get("message_id") if isinstance(message.get("message_id"), int) else None
    not_added = f"Your reply was not added as a comment on {approval.public_id} in the HITL portal"
    account = TelegramAccount.objects.select_related("user").filter(telegram_user_id=sender).first()
    if account is None:
        _say(card.chat_id, f"{not_added}: {UNLINKED}", reply_to=reply_to)
        return
    if not may_press(account.user, approval):
        _say(
            card.chat_id,
            f"{not_added}: {account.user.email} is not a reviewer of {approval.workspace.name} there.",
            reply_to=reply_to,
        )
        return
    try:
        comment_add(approval=approval, user=account.user, text=text, via=CommentVia.TELEGRAM)
    except DomainError as refused:  # too long, blank once trimmed: the comment rules' own words
        _say(card.chat_id, f"{not_added}: {refused.message}", reply_to=reply_to)


def _link(*, chat_id: str, message: dict, sender: int, text: str) -> None:
    """A private message to the bot: "/start CODE" (the account page's deep link) or the code alone."""
    words = text.strip().split()
    code = words[-1] if words and (len(words) == 1 or words[0] == "/start") else ""
    if not code or code == "/start":
        _say(
            chat_id,
            "To link your Telegram account, make a code on your account page in the HITL portal and send it here.",
        )
        return
    username = str((message.get("from") or {}).get("username") or "")
    try:
        user = telegram_account_link(code=code, telegram_user_id=sender, telegram_username=username)
    except LinkRefused as refused:
        _say(chat_id, refused.message)
        return
    _say(chat_id, f"Linked: this Telegram account now decides as {user.email} in the HITL portal.")
