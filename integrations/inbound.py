"""Slack, inbound: a button or the reason modal on a request's message decides it.

Deciding goes through approvals.review.decide.approval_decide, the one decide service the tab, the
API, the CLI and the one-click links use, so "decided once" (and quorum, four eyes and the
reason's limit, where the rule asks for them) hold in Slack exactly as everywhere else.
"""

import json
import logging
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser

from approvals.exceptions import ReasonTooLong, WrongDecision
from approvals.models import ApprovalRequest
from approvals.presenters.facts import ASKS_REASON
from approvals.review.decide import DECISIONS, approval_decide
from common.exceptions import DomainError

from . import blocks, slack
from .chat_claims import chat_claim
from .chat_people import NOTHING_DECIDED, already_words, approval_pressed, may_press

logger = logging.getLogger(__name__)

QUESTION_ACTION_PREFIX = "hitl_q_"  # a question's or plan's buttons (integrations.blocks.question_actions)


@dataclass
class Answer:
    """What the endpoint answers Slack (a body for view submissions), and what to tell the person."""

    body: dict = field(default_factory=dict)
    ephemeral: str = ""  # shown only to the person who clicked, in the channel


def slack_member(slack_user_id: str) -> tuple[AbstractBaseUser | None, str, str]:
    """(the active portal user whose email Slack reports for this Slack user or None, that email, why nobody).

    The email users.info reports is the identity; being in the channel is not a permission. `why` is
    set only when Slack gave no email; an email that matches no active user is (None, email, "").
    """
    try:
        identity = slack.identity_of(slack_user_id)
    except slack.SlackError:
        return None, "", "Slack did not say who you are just now; try again in a moment."
    if not identity.email:
        return (
            None,
            "",
            ("Slack shows this app no email address for you, so the HITL portal cannot tell which member you are."),
        )
    return get_user_model().objects.filter(email__iexact=identity.email, is_active=True).first(), identity.email, ""


def reviewer_for(*, slack_user_id: str, approval: ApprovalRequest) -> tuple[AbstractBaseUser | None, str]:
    """The portal member this Slack user is, if they may decide the request; else (None, why not)."""
    user, email, why = slack_member(slack_user_id)
    if why:
        return None, f"{why} {NOTHING_DECIDED}"
    if not may_press(user, approval):
        return None, (
            f"{email} is not a reviewer of {approval.workspace.name} in the HITL portal, so you cannot "
            f"decide this request. {NOTHING_DECIDED} Ask an admin of {approval.workspace.name} to add you."
        )
    return user, ""


def slack_block_action(*, payload: dict) -> Answer:
    """A button on a request's message: decide (Approve, Proceed past cap) or ask for a reason first."""
    actions = payload.get("actions") or []
    action = actions[0] if actions and isinstance(actions[0], dict) else {}
    decision = action.get("action_id")
    if isinstance(decision, str) and decision.startswith(QUESTION_ACTION_PREFIX):
        return slack_question_action(payload=payload, action=action)
    if decision == blocks.CLAIM_ACTION:
        return slack_claim(payload=payload, action=action)
    if decision not in DECISIONS:
        return Answer()  # not one of our buttons (Slack also reports link clicks): nothing to do
    approval, user, refusal = _pressed_pending(payload=payload, action=action)
    if refusal is not None:
        return refusal
    if decision in ASKS_REASON:
        try:
            slack.call(
                "views.open",
                timeout=slack.INTERACTIVE_TIMEOUT_SECONDS,
                trigger_id=str(payload.get("trigger_id") or ""),
                view=blocks.reason_modal(approval=approval, decision=decision),
            )
        except slack.SlackError as error:
            logger.warning("Could not open the reason modal for %s: %s", approval.public_id, error.message)
            return Answer(ephemeral=f"Slack could not open the reason form; click again. {NOTHING_DECIDED}")
        return Answer()
    return _decide(approval=approval, user=user, decision=decision, reason="")


def _pressed_pending(*, payload: dict, action: dict):
    """The pending request a button names and the reviewer pressing it, or the Answer refusing the press."""
    approval = approval_pressed(str(action.get("value") or ""))
    if approval is None:
        return None, None, Answer(ephemeral=f"This request is not in the HITL portal any more. {NOTHING_DECIDED}")
    user, why_not = reviewer_for(slack_user_id=_user_id(payload), approval=approval)
    if user is None:
        return approval, None, Answer(ephemeral=why_not)
    if not approval.is_pending():
        return approval, user, Answer(ephemeral=already_words(approval))
    return approval, user, None


def slack_claim(*, payload: dict, action: dict) -> Answer:
    """ "I'm on it": claimed as the member Slack says the presser is (refused as the decide buttons refuse);
    everyone sees who once the cards refresh. Someone else's claim is told to the presser, naming them."""
    approval, user, refusal = _pressed_pending(payload=payload, action=action)
    if refusal is not None:
        return refusal
    claimed, said = chat_claim(approval=approval, user=user)
    return Answer(ephemeral="" if claimed else said)  # the card itself names the new claimant


def slack_view_submission(*, payload: dict) -> Answer:
    """The reason modal submitted: decide with that reason, or say in the modal why not."""
    view = payload.get("view") or {}
    if view.get("callback_id") in (blocks.ANSWERS_MODAL, blocks.PLAN_MODAL):
        return slack_question_submission(payload=payload, view=view)
    if view.get("callback_id") != blocks.REASON_MODAL:
        return Answer()
    try:
        meta = json.loads(view.get("private_metadata") or "{}")
    except ValueError:
        meta = {}
    decision = meta.get("decision") if isinstance(meta, dict) else None
    approval = approval_pressed(str(meta.get("approval") or "")) if decision in ASKS_REASON else None
    if approval is None:
        return _modal_error(f"This request is not in the HITL portal any more. {NOTHING_DECIDED}")
    reason = _reason(view)
    user, why_not = reviewer_for(slack_user_id=_user_id(payload), approval=approval)
    if user is None:
        return _modal_error(why_not)
    try:
        answer = _decide(approval=approval, user=user, decision=decision, reason=reason)
    except ReasonTooLong as refused:  # said beside the reason, which the person can shorten
        return _modal_error(refused.message)
    if answer.ephemeral:  # decided meanwhile: say so in the modal instead of closing it silently
        return Answer(body={"response_action": "update", "view": blocks.notice_view(answer.ephemeral)})
    return Answer(body={"response_action": "clear"})


def _decide(*, approval: ApprovalRequest, user, decision: str, reason: str, answers: dict | None = None) -> Answer:
    try:
        approval, already = approval_decide(
            approval=approval, user=user, decision=decision, reason=reason, answers=answers
        )
    except ReasonTooLong:
        raise
    except DomainError as refused:
        # Whatever the one decide service refuses (the wrong pair of words; approving one's own
        # request where the rule asks for four eyes), the person is told its reason, as the API would.
        return Answer(ephemeral=f"{refused.message.rstrip('.')}. {NOTHING_DECIDED}")
    # The message itself is updated by the outbox: approval_decide wrote a `decided` delivery for
    # every contact of the rule, as it does for a decision made anywhere else.
    return Answer(ephemeral=already_words(approval) if already else "")


def _modal_error(text: str, block: str = "reason") -> Answer:
    return Answer(body={"response_action": "errors", "errors": {block: text[:2000]}})


def _user_id(payload: dict) -> str:
    user = payload.get("user")
    return str(user.get("id") or "") if isinstance(user, dict) else ""


def _channel(payload: dict) -> str:
    channel = payload.get("channel") if isinstance(payload.get("channel"), dict) else {}
    container = payload.get("container") if isinstance(payload.get("container"), dict) else {}
    return str(channel.get("id") or container.get("channel_id") or "")


def _reason(view: dict) -> str:
    try:
        return (view["state"]["values"]["reason"]["reason"]["value"] or "").strip()
    except (KeyError, TypeError):
        return ""


def slack_tell(*, payload: dict, text: str) -> None:
    """An ephemeral message to the person who clicked, in the channel of the click; best effort."""
    slack_whisper(channel=_channel(payload), user=_user_id(payload), text=text)


def slack_whisper(*, channel: str, user: str, text: str, thread_ts: str = "") -> None:
    """An ephemeral message only `user` sees, in `channel` (in the thread `thread_ts`); best effort."""
    if not channel or not user:
        return
    where = {"thread_ts": thread_ts} if thread_ts else {}
    try:
        slack.call(
            "chat.postEphemeral",
            timeout=slack.INTERACTIVE_TIMEOUT_SECONDS,
            channel=channel,
            user=user,
            text=text,
            **where,
        )
    except slack.SlackError as error:
        logger.warning("Could not tell a Slack user why: %s", error.message)


# Questions and plans ----------------------------------------------------------------------------


def slack_question_action(*, payload: dict, action: dict) -> Answer:
    """A question's button: an option answers it, Decline declines it; "Answer…" and a plan open a modal."""
    approval = approval_pressed(str(action.get("value") or ""))
    if approval is None or not approval.is_question:
        return Answer(ephemeral=f"This request is not in the HITL portal any more. {NOTHING_DECIDED}")
    user, why_not = reviewer_for(slack_user_id=_user_id(payload), approval=approval)
    if user is None:
        return Answer(ephemeral=why_not)
    if not approval.is_pending():
        return Answer(ephemeral=already_words(approval))
    action_id = str(action.get("action_id"))
    if action_id == blocks.DECLINE_ACTION:
        return _decide(approval=approval, user=user, decision="decline", reason="")
    if action_id.startswith(blocks.OPTION_ACTION + ":"):
        question = blocks.answered_by_buttons(approval)
        index = action_id.rpartition(":")[2]
        options = blocks.button_options(question) if question else []
        if not index.isdigit() or int(index) >= len(options):
            return Answer(ephemeral=f"That button is not an option of this question any more. {NOTHING_DECIDED}")
        answers = {question["id"]: options[int(index)][1]}
        return _decide(approval=approval, user=user, decision="answer", reason="", answers=answers)
    view = blocks.plan_modal(approval) if action_id == blocks.PLAN_ACTION else blocks.answers_modal(approval)
    try:
        slack.call(
            "views.open",
            timeout=slack.INTERACTIVE_TIMEOUT_SECONDS,
            trigger_id=str(payload.get("trigger_id") or ""),
            view=view,
        )
    except slack.SlackError as error:
        logger.warning("Could not open the question modal for %s: %s", approval.public_id, error.message)
        return Answer(ephemeral=f"Slack could not open the form; click again. {NOTHING_DECIDED}")
    return Answer()


def slack_question_submission(*, payload: dict, view: dict) -> Answer:
    """The answers modal or the plan modal submitted: decide through the one decide service, or say why not
    beside the input at fault."""
    try:
        meta = json.loads(view.get("private_metadata") or "{}")
    except ValueError:
        meta = {}
    approval = approval_pressed(str(meta.get("approval") or "")) if isinstance(meta, dict) else None
    first_block = "decision" if view.get("callback_id") == blocks.PLAN_MODAL else "q0"
    if approval is None or not approval.is_question:
        return _modal_error(f"This request is not in the HITL portal any more. {NOTHING_DECIDED}", first_block)
    user, why_not = reviewer_for(slack_user_id=_user_id(payload), approval=approval)
    if user is None:
        return _modal_error(why_not, first_block)
    state = (view.get("state") or {}).get("values") or {}
    if not isinstance(state, dict):
        state = {}
    if view.get("callback_id") == blocks.PLAN_MODAL:
        picked = ((state.get("decision") or {}).get("value") or {}).get("selected_option") or {}
        decision = picked.get("value") if picked.get("value") in ("approve", "revise") else "approve"
        reason = str(((state.get("reason") or {}).get("value") or {}).get("value") or "").strip()
        answers = None
    else:
        decision, reason, answers = "answer", "", blocks.modal_answers(approval, state)
    try:
        approval, already = approval_decide(
            approval=approval, user=user, decision=decision, reason=reason, answers=answers
        )
    except WrongDecision as refused:
        return _modal_error(refused.message, _block_of(approval, refused.field or ""))
    if already:
        return Answer(body={"response_action": "update", "view": blocks.notice_view(already_words(approval))})
    return Answer(body={"response_action": "clear"})


def _block_of(approval: ApprovalRequest, field: str) -> str:
    """The modal block an error belongs beside: answers.<id> → q<index>; reason; else the first input."""
    if field == "reason":
        return "reason"
    ids = [question["id"] for question in approval.questions or []]
    qid = field.removeprefix("answers.")
    if qid in ids:
        return f"q{ids.index(qid)}"
    return "decision" if approval.kind == "plan" else "q0"
