"""The Slack message for a request: its card's facts as Block Kit, worded by the shared presenters.

A pending request gets its decision buttons (Approve rightmost); a resolved one gets the same
facts and the resolution line in their place, so a message never shows a stale "pending".
"""

import json

from approvals.models import ApprovalKind, ApprovalRequest, Status
from approvals.presenters.channels import act_subject, edit_in_portal_url, review_url
from approvals.presenters.facts import LEVEL_HINTS, answers_lines, buttons, card_title, decision_line, facts
from approvals.presenters.text import visible, when
from approvals.questions.validate import answer_from_text, option_label

from .chat_people import CLAIM_LABEL, claimant

# Block Kit limits (api.slack.com/reference/block-kit): longer text is refused with invalid_blocks.
HEADER_MAX = 150
FIELD_MAX = 2000
SECTION_MAX = 3000

REASON_MODAL = "hitl_reason"  # Reject and Stop the run (presenters.ASKS_REASON) ask for a reason here
ANSWERS_MODAL = "hitl_answers"  # a question's answers, where buttons cannot hold them
PLAN_MODAL = "hitl_plan"  # a plan: its text, Approve or Ask for changes
# A question's buttons (action ids): one per option, "Answer…" (the modal), "Decline", "Review the plan…".
OPTION_ACTION = "hitl_q_option"  # + ":<option index>", unique within the message as Slack wants
ANSWER_ACTION = "hitl_q_answer"
DECLINE_ACTION = "hitl_q_decline"
PLAN_ACTION = "hitl_q_plan"
CLAIM_ACTION = "hitl_claim"  # "I'm on it": claims (collaboration's claim_take), never decides
BUTTONS_MAX = 5  # a single choice of up to this many options is answered by its buttons


def escape(text: str) -> str:
    """Text for Slack mrkdwn: control and bidi characters made visible (presenters.visible; the
    facts already are, and visible text stays as it is), and &, < and > escaped — in mrkdwn they
    are markup (links, mentions such as <!channel>)."""
    return visible(text, keep_newlines=True).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def portal_url(approval: ApprovalRequest) -> str:
    return review_url(approval)


def fallback_text(approval: ApprovalRequest) -> str:
    """The notification's plain text (and what screen readers get): the act, as an email subject names it."""
    title = card_title(approval)
    if approval.is_pending() and approval.is_question:
        return _clip(act_subject(approval, "requested"), SECTION_MAX)
    if approval.is_pending():
        return _clip(f"Approve: {title}?", SECTION_MAX)
    return _clip(f"{title} — {decision_line(approval)}", SECTION_MAX)


def test_text() -> str:
    return "Test message from the HITL Portal: approval requests for this contact will arrive in this channel."


def digest_blocks(subject: str, items: list[dict]) -> list[dict]:
    """The fatigue rule's digest: one line per request, linking to its page (decided there, not here)."""
    lines = [f"• <{item['review_url']}|{escape(item['subject'])}>" for item in items]
    blocks, chunk = [_section(f"*{escape(subject)}*")], []
    for line in lines:  # a section holds 3,000 characters: as many sections as the list needs
        if sum(len(item) + 1 for item in chunk) + len(line) > SECTION_MAX - 10:
            blocks.append(_section("\n".join(chunk)))
            chunk = []
        chunk.append(line)
    if chunk:
        blocks.append(_section("\n".join(chunk)))
    return blocks[:50]  # Slack's limit per message; a digest is a minute's worth, far fewer


def nudge_text(approval: ApprovalRequest, event: str) -> str:
    """A reminder or an escalation, as a reply under the request's message."""
    title = escape(card_title(approval))
    if not approval.is_pending():
        return f"{title}: {escape(decision_line(approval))}"
    lead = "Escalated — still waiting for a decision" if event == "escalated" else "Reminder — still waiting"
    return f"{lead}: {title}, expires {when(approval.expires_at)}. <{portal_url(approval)}|Open in portal>"


def _field(fact) -> dict:
    value = f"<{fact.url}|{escape(fact.value)}>" if fact.url else escape(fact.value) or "—"
    return {"type": "mrkdwn", "text": _clip(f"*{fact.label}*\n{value}", FIELD_MAX), "verbatim": True}


def _facts(approval: ApprovalRequest) -> list[dict]:
    shown = facts(approval)
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": _clip(card_title(approval), HEADER_MAX)}},
        {"type": "section", "fields": [_field(fact) for fact in shown if not fact.long][:10]},  # Slack's limit
    ]
    for fact in shown:
        if fact.key == "message":
            blocks.append(_section(f"> {escape(fact.value)}"))
        elif fact.key in ("arguments", "approved_arguments"):
            blocks.append(_section(f"*{fact.label}*\n```{escape(_clip(fact.value, SECTION_MAX - 40))}```"))
        elif fact.long:
            blocks.append(_section(f"*{fact.label}*\n{escape(fact.value)}"))
    # What the config's level lets the portal pass: stored only as allowed, shown as stored.
    if not approval.is_token_cap and not approval.is_question and approval.summary == "" and approval.arguments is None:
        blocks.append(_context(LEVEL_HINTS.get(approval.pass_information_level, "")))
    return blocks


def _section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, SECTION_MAX), "verbatim": True}}


def _context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(text, SECTION_MAX), "verbatim": True}]}


def _link(approval: ApprovalRequest) -> dict:
    # A link in text rather than a URL button: a URL button would also post an interaction.
    text = f"<{portal_url(approval)}|Open in portal>"
    if edit_url := edit_in_portal_url(approval):
        # Slack cannot edit a call's arguments; the portal's card can (the buttons here approve as proposed).
        text = f"<{edit_url}|Edit in the portal> · {text}"
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text}]}


def request_blocks(approval: ApprovalRequest, claimed: str | None = None) -> list[dict]:
    """The message as it should read now: buttons while pending, the resolution once resolved.

    `claimed` is who is on it (chat_people.claimant; read here when not given): named under the facts, and
    while nobody is, an "I'm on it" button on a row of its own under the decision's buttons.
    """
    blocks = _facts(approval)
    claimed = claimant(approval) if claimed is None else claimed
    if claimed:
        blocks.append(_context(f"*Claimed by {escape(claimed)}*"))
    if approval.is_question and approval.is_pending():
        blocks.append(question_actions(approval))
    elif approval.is_pending():
        blocks.append(
            {
                "type": "actions",
                "block_id": "hitl_decision",
                "elements": [
                    {
                        "type": "button",
                        "action_id": action,
                        "text": {"type": "plain_text", "text": label},
                        "style": style,
                        "value": approval.public_id,
                    }
                    for action, label, style in buttons(approval)
                ],
            }
        )
    else:
        blocks.append(_section(resolution_line(approval)))
    if approval.is_pending() and not claimed:
        claim = _button(CLAIM_ACTION, CLAIM_LABEL, approval.public_id)
        blocks.append({"type": "actions", "block_id": "hitl_claim", "elements": [claim]})
    blocks.append(_link(approval))
    return blocks


def resolution_line(approval: ApprovalRequest) -> str:
    """'*Approved by ana@… at …*', with the reason when one was given; the expired line as it is."""
    line = f"*{escape(decision_line(approval))}*"
    status = approval.effective_status()
    if status in (Status.APPROVED, Status.REJECTED, Status.DECLINED) and approval.reason:
        line += f"\nReason: {escape(approval.reason)}"
    for answer in answers_lines(approval):
        line += f"\n• {escape(answer)}"
    return line


# Questions and plans ----------------------------------------------------------------------------


def answered_by_buttons(approval: ApprovalRequest) -> dict | None:
    """The one question a message's buttons can answer (one single choice of ≤ 5 options, or yes/no), or None."""
    questions = approval.questions or []
    if approval.kind != ApprovalKind.QUESTION or len(questions) != 1:
        return None
    question = questions[0]
    if question["type"] == "boolean":
        return question
    if question["type"] == "choice" and not question["multi"] and len(question["options"]) <= BUTTONS_MAX:
        return question
    return None


def button_options(question: dict) -> list[tuple[str, object]]:
    """(label, value) of each button of a question answered by buttons, in its order."""
    if question["type"] == "boolean":
        return [("Yes", True), ("No", False)]
    return [(option_label(option), option["value"]) for option in question["options"]]


def _button(action_id: str, text: str, value: str, style: str = "") -> dict:
    button = {"type": "button", "action_id": action_id, "text": {"type": "plain_text", "text": _clip(text, 75)}}
    button["value"] = value
    if style:
        button["style"] = style
    return button


def question_actions(approval: ApprovalRequest) -> dict:
    """A pending question's or plan's buttons: its options, or a button opening the modal; Decline first."""
    public_id = approval.public_id
    if approval.kind == ApprovalKind.PLAN:
        elements = [_button(PLAN_ACTION, "Review the plan…", public_id, "primary")]
    else:
        elements = [_button(DECLINE_ACTION, "Decline", public_id, "danger")]
        question = answered_by_buttons(approval)
        if question is None:
            elements.append(_button(ANSWER_ACTION, "Answer…", public_id, "primary"))
        else:
            for index, (label, _value) in enumerate(button_options(question)):
                elements.append(_button(f"{OPTION_ACTION}:{index}", label, public_id))
    return {"type": "actions", "block_id": "hitl_question", "elements": elements}


def _option(text: str, value: str) -> dict:
    return {"text": {"type": "plain_text", "text": _clip(text, 75)}, "value": value}


def _input(block_id: str, label: str, element: dict, *, optional: bool) -> dict:
    return {
        "type": "input",
        "block_id": block_id,
        "optional": optional,
        "label": {"type": "plain_text", "text": _clip(label, 2000)},
        "element": {**element, "action_id": "value"},
    }


def _question_inputs(index: int, question: dict) -> list[dict]:
    """One question as modal inputs (block q<index>, and q<index>_own for words of one's own)."""
    label = visible(question["prompt"])
    optional = not question["required"]
    kind = question["type"]
    if kind == "boolean":
        element = {"type": "radio_buttons", "options": [_option("Yes", "true"), _option("No", "false")]}
        return [_input(f"q{index}", label, element, optional=optional)]
    if kind == "number":
        element = {"type": "number_input", "is_decimal_allowed": True}
        if question.get("min") is not None:
            element["min_value"] = str(question["min"])
        if question.get("max") is not None:
            element["max_value"] = str(question["max"])
        return [_input(f"q{index}", label, element, optional=optional)]
    if kind == "text":
        element = {"type": "plain_text_input", "multiline": True, "max_length": 2000}
        return [_input(f"q{index}", label, element, optional=optional)]
    options = [_option(visible(option_label(o)), str(n)) for n, o in enumerate(question["options"])]
    few = len(options) <= 10
    if question["multi"]:
        element = {"type": "checkboxes" if few else "multi_static_select", "options": options}
    else:
        element = {"type": "radio_buttons" if few else "static_select", "options": options}
    own = question["free_text"]
    inputs = [_input(f"q{index}", label, element, optional=optional or own)]
    if own:
        words = {"type": "plain_text_input", "max_length": 2000}
        inputs.append(_input(f"q{index}_own", "…or in your own words", words, optional=True))
    return inputs


def answers_modal(approval: ApprovalRequest) -> dict:
    """The modal "Answer…" opens: every question as an input; submitted, it answers through the one decide service."""
    blocks = [_section(f"*{escape(card_title(approval))}*")]
    for index, question in enumerate(approval.questions or []):
        blocks += _question_inputs(index, question)
    return {
        "type": "modal",
        "callback_id": ANSWERS_MODAL,
        "private_metadata": json.dumps({"approval": approval.public_id}),
        "title": {"type": "plain_text", "text": "Answer"},
        "submit": {"type": "plain_text", "text": "Answer"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": blocks[:100],
    }


def modal_answers(approval: ApprovalRequest, state: dict) -> dict:
    """The answers a submitted answers modal holds (its state's values), for answers_check."""
    answers = {}
    for index, question in enumerate(approval.questions or []):
        chosen = ((state.get(f"q{index}") or {}).get("value")) or {}
        own = (((state.get(f"q{index}_own") or {}).get("value")) or {}).get("value") or ""
        kind = question["type"]
        if kind == "choice":
            picked = chosen.get("selected_options") or [chosen.get("selected_option") or {}]
            indexes = [str(o.get("value")) for o in picked if isinstance(o, dict)]
            count = len(question["options"])
            values = [question["options"][int(i)]["value"] for i in indexes if i.isdigit() and int(i) < count]
            if question["multi"]:
                answers[question["id"]] = values + ([own.strip()] if own.strip() else [])
            else:
                answers[question["id"]] = own.strip() or (values[0] if values else None)
        elif kind == "boolean":
            option = chosen.get("selected_option") or {}
            answers[question["id"]] = {"true": True, "false": False}.get(option.get("value"))
        elif kind == "number":
            answers[question["id"]] = answer_from_text(question, str(chosen.get("value") or ""))
        else:
            answers[question["id"]] = chosen.get("value") or None
    return answers


def plan_modal(approval: ApprovalRequest) -> dict:
    """A plan's modal: its text (as written, escaped), and Approve or Ask for changes with what to change."""
    text = escape(approval.plan)
    chunks = [text[start : start + SECTION_MAX - 10] for start in range(0, len(text), SECTION_MAX - 10)] or [""]
    blocks = [_section(f"*{escape(card_title(approval))}*")]
    blocks += [_section(f"```{chunk}```") for chunk in chunks[:20]]
    choices = [_option("Approve", "approve"), _option("Ask for changes", "revise")]
    blocks.append(_input("decision", "Your decision", {"type": "radio_buttons", "options": choices}, optional=False))
    what = {"type": "plain_text_input", "multiline": True, "max_length": 2000}
    blocks.append(_input("reason", "What to change (needed to ask for changes)", what, optional=True))
    return {
        "type": "modal",
        "callback_id": PLAN_MODAL,
        "private_metadata": json.dumps({"approval": approval.public_id}),
        "title": {"type": "plain_text", "text": "Review the plan"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": blocks,
    }


def reason_modal(*, approval: ApprovalRequest, decision: str) -> dict:
    """The modal a Reject (or Stop the run) opens: the reason, passed back to the agent."""
    label = next(label for word, label, _style in buttons(approval) if word == decision)
    return {
        "type": "modal",
        "callback_id": REASON_MODAL,
        # Signed by Slack on the way back; still re-checked: the request and the person are looked up again.
        "private_metadata": json.dumps({"approval": approval.public_id, "decision": decision}),
        "title": {"type": "plain_text", "text": label},
        "submit": {"type": "plain_text", "text": label},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [
            {
                "type": "section",
                "text": {"type": "plain_text", "text": _clip(card_title(approval), SECTION_MAX)},
            },
            {
                "type": "input",
                "block_id": "reason",
                "optional": True,
                "label": {"type": "plain_text", "text": "Reason — passed back to the agent"},
                "element": {"type": "plain_text_input", "action_id": "reason", "multiline": True, "max_length": 2000},
            },
        ],
    }


def notice_view(text: str) -> dict:
    """A modal that only says something (the request was decided meanwhile)."""
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": "HITL"},
        "close": {"type": "plain_text", "text": "Close"},
        "blocks": [_section(escape(text))],
    }
