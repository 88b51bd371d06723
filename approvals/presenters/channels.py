"""How a request reads in a notification (email, Slack, Telegram, Web Push, webhooks): its subject, its line,
and the links that bring a reviewer to the portal."""

from django.conf import settings
from django.urls import reverse

from approvals.edits import checks as edits
from approvals.models import ApprovalKind, ApprovalRequest
from approvals.presenters.facts import card_title, decision_line, is_undeliverable
from approvals.presenters.text import visible, when


def review_url(approval: ApprovalRequest) -> str:
    """The request's page in the portal (behind the normal login), as every notification links it."""
    return settings.HITL_BASE_URL + reverse("approvals:detail", args=[approval.public_id])


def act_subject(approval: ApprovalRequest, event: str) -> str:
    """A notification's subject names the act: "Approve: Delete customer T-4821?"."""
    title = card_title(approval)
    verb = {ApprovalKind.TOKEN_CAP: "Decide", ApprovalKind.QUESTION: "Answer", ApprovalKind.PLAN: "Review the plan"}
    ask = f"{verb.get(approval.kind, 'Approve')}: {title}?"
    if event == "reminder":
        return f"Reminder — {ask}"
    if event == "escalated":
        return f"Escalated — {ask}"
    if event == "decided":
        return f"{approval.get_status_display()}: {title}"
    if event == "expired":
        if is_undeliverable(approval):
            return f"Undeliverable, nobody could be reached: {title}"
        return f"Expired, nobody answered: {title}"
    return ask


def notification_body(approval: ApprovalRequest, event: str) -> str:
    """The one line under a notification's subject (a push notification's body): who asks and until
    when, or how it ended — never the arguments or summary, which a locked phone's screen would show."""
    if event in ("decided", "expired") or not approval.is_pending():
        return decision_line(approval)
    asker = visible(approval.caller) or "An agent"
    return f"{asker} asks · run {visible(approval.run_id)} · expires {when(approval.expires_at)}"


def edit_in_portal_url(approval: ApprovalRequest) -> str:
    """Where a channel that cannot edit (Slack, email) sends a reviewer to approve with edits ("" where none)."""
    if not (edits.may_edit(approval) and approval.is_pending()):
        return ""
    return f"{review_url(approval)}#edit-{approval.public_id}"
