"""The Telegram message for a request: its card's facts in Telegram's HTML mode, worded by the shared presenters.

A pending request gets inline buttons (the presenters' BUTTONS, Approve last); a resolved one gets
the same facts and the resolution line in their place, so a message never shows a stale "pending".
"""

import html

from approvals.models import ApprovalRequest, Status
from approvals.presenters.channels import review_url
from approvals.presenters.facts import LEVEL_HINTS, buttons, card_title, decision_line, facts
from approvals.presenters.text import visible, when

from .chat_people import CLAIM_LABEL, claimant

# Telegram's limit for a message's text (after entities are parsed); longer text is refused.
TEXT_MAX = 4096
# What a long fact (arguments, a summary) may take, so the rest of the card always fits.
LONG_MAX = 1500
CALLBACK_PREFIX = "hitl"
CLAIM = "claim"  # "hitl:claim:apr_…": "I'm on it" (collaboration's claim_take), never a decision


def escape(text: str) -> str:
    """Text for Telegram's HTML mode: controls and bidi characters made visible (the presenters'
    `visible`; the facts already are), then &, < and > escaped — in HTML mode they are markup."""
    return html.escape(visible(text, keep_newlines=True), quote=False)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def callback_data(decision: str, approval: ApprovalRequest) -> str:
    """What a button sends back (at most 64 bytes: "hitl:approve:apr_…")."""
    return f"{CALLBACK_PREFIX}:{decision}:{approval.public_id}"


def parse_callback(data: str) -> tuple[str, str] | None:
    """(decision, approval id) from a button's data, or None if it is not one of ours."""
    parts = (data or "").split(":")
    if len(parts) != 3 or parts[0] != CALLBACK_PREFIX:
        return None
    return parts[1], parts[2]


def _fact_line(fact) -> str:
    value = escape(fact.value) or "—"
    if fact.code:
        value = f"<code>{value}</code>"
    if fact.url:
        value = f'<a href="{html.escape(fact.url, quote=True)}">{value}</a>'
    return f"<b>{html.escape(fact.label)}:</b> {value}"


def card_text(approval: ApprovalRequest, claimed: str | None = None) -> str:
    """The message's text as it should read now; `claimed`, who is on it (chat_people.claimant; read here
    when not given), is named above the link while the request is pending."""
    claimed = claimant(approval) if claimed is None else claimed
    lines = [f"<b>{escape(card_title(approval))}</b>", ""]
    for fact in facts(approval):
        if fact.key == "message":
            lines.append(f"<blockquote>{escape(_clip(fact.value, LONG_MAX))}</blockquote>")
        elif fact.key == "arguments":
            lines.append(f"<b>{html.escape(fact.label)}:</b>\n<pre>{escape(_clip(fact.value, LONG_MAX))}</pre>")
        elif fact.long:
            lines.append(f"<b>{html.escape(fact.label)}:</b>\n{escape(_clip(fact.value, LONG_MAX))}")
        else:
            lines.append(_fact_line(fact))
    # What the config's level lets the portal pass: stored only as allowed, shown as stored.
    if not approval.is_token_cap and approval.summary == "" and approval.arguments is None:
        lines.append(f"<i>{html.escape(LEVEL_HINTS.get(approval.pass_information_level, ''))}</i>")
    lines.append("")
    if not approval.is_pending():
        lines.append(resolution_line(approval))
    elif claimed:
        lines.append(f"<b>Claimed by {escape(claimed)}</b>")
    lines.append(f'<a href="{html.escape(review_url(approval), quote=True)}">Open in portal</a>')
    text = "\n".join(lines)
    if len(text) > TEXT_MAX:  # the long facts were clipped already; a pathological card loses its tail
        text = "\n".join(lines[:2]) + "\n" + resolution_line(approval) if not approval.is_pending() else lines[0]
        text += f'\n<a href="{html.escape(review_url(approval), quote=True)}">Open in portal</a>'
    return text


def resolution_line(approval: ApprovalRequest) -> str:
    """'<b>Approved by ana@… at …</b>', with the reason when a person gave one; the expired line as it is."""
    line = f"<b>{escape(decision_line(approval))}</b>"
    status = approval.effective_status()
    if status in (Status.APPROVED, Status.REJECTED) and approval.reason:
        line += f"\nReason: {escape(_clip(approval.reason, LONG_MAX))}"
    return line


def keyboard(approval: ApprovalRequest, claimed: str | None = None) -> dict:
    """The inline buttons while pending, none once resolved (an empty keyboard removes them on edit); while
    nobody is on it (`claimed`, as card_text takes it), "I'm on it" on a row of its own under them."""
    if not approval.is_pending():
        return {"inline_keyboard": []}
    rows = [
        [{"text": label, "callback_data": callback_data(word, approval)} for word, label, _style in buttons(approval)]
    ]
    if not (claimant(approval) if claimed is None else claimed):
        rows.append([{"text": CLAIM_LABEL, "callback_data": callback_data(CLAIM, approval)}])
    return {"inline_keyboard": rows}


def nudge_text(approval: ApprovalRequest, event: str) -> str:
    """A reminder or an escalation, as a reply to the request's message."""
    title = escape(card_title(approval))
    if not approval.is_pending():
        return f"{title}: {escape(decision_line(approval))}"
    lead = "Escalated — still waiting for a decision" if event == "escalated" else "Reminder — still waiting"
    return f"{lead}: {title}, expires {when(approval.expires_at)}."


def reason_prompt(approval: ApprovalRequest, decision: str) -> str:
    label = next(label for word, label, _style in buttons(approval) if word == decision)
    return (
        f"{html.escape(label)}: {escape(card_title(approval))}\n"
        "Reply to this message with your reason — it is passed back to the agent."
    )


def test_text() -> str:
    return "Test message from the HITL Portal: approval requests for this contact will arrive in this chat."


def digest_text(subject: str, items: list[dict]) -> str:
    lines = [f"<b>{escape(subject)}</b>"]
    for item in items:
        line = f'• <a href="{html.escape(item["review_url"], quote=True)}">{escape(item["subject"])}</a>'
        if sum(len(existing) + 1 for existing in lines) + len(line) > TEXT_MAX - 20:
            lines.append("…")
            break
        lines.append(line)
    return "\n".join(lines)
