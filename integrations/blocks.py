"""The Slack message for a request: its card's facts as Block Kit, worded by the shared presenters.

A pending request gets its decision buttons (Approve rightmost); a resolved one gets the same
facts and the resolution line in their place, so a message never shows a stale "pending".
"""

import json

from approvals.models import ApprovalRequest, Status
from approvals.presenters import (
    LEVEL_HINTS,
    buttons,
    card_title,
    decision_line,
    edit_in_portal_url,
    facts,
    review_url,
    visible,
    when,
)

# Block Kit limits (api.slack.com/reference/block-kit): longer text is refused with invalid_blocks.
HEADER_MAX = 150
FIELD_MAX = 2000
SECTION_MAX = 3000

REASON_MODAL = "hitl_reason"  # Reject and Stop the run (presenters.ASKS_REASON) ask for a reason here


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
    if not approval.is_token_cap and approval.summary == "" and approval.arguments is None:
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


def request_blocks(approval: ApprovalRequest) -> list[dict]:
    """The message as it should read now: buttons while pending, the resolution once resolved."""
    blocks = _facts(approval)
    if approval.is_pending():
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
    blocks.append(_link(approval))
    return blocks


def resolution_line(approval: ApprovalRequest) -> str:
    """'*Approved by ana@… at …*', with the reason when one was given; the expired line as it is."""
    line = f"*{escape(decision_line(approval))}*"
    status = approval.effective_status()
    if status in (Status.APPROVED, Status.REJECTED) and approval.reason:
        line += f"\nReason: {escape(approval.reason)}"
    return line


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
