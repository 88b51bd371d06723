"""How an approval request reads on a card and in the history, in one place for every template."""

import json
from datetime import timedelta

from django import template
from django.utils import timezone

from approvals import selectors
from approvals.models import ApprovalRequest, Status

register = template.Library()

register.filter("card_title", selectors.card_title)
register.filter("meter_percent", selectors.meter_percent)

EXPIRED_LINE = "Expired — nobody answered; counted as rejected"


@register.filter
def thousands(value) -> str:
    """51200 → 51,200: token counts are read at a glance."""
    return f"{value:,}" if isinstance(value, int) else ""


@register.filter
def cap_percent(approval: ApprovalRequest) -> int:
    """The share of the cap used, unclamped (the meter itself stops at 100%)."""
    if not approval.token_cap or approval.tokens_used is None:
        return 0
    return round(approval.tokens_used * 100 / approval.token_cap)


@register.filter
def point_words(point: str) -> str:
    return selectors.POINT_WORDS.get(point, "")


@register.filter
def level_hint(level: str) -> str:
    return selectors.LEVEL_HINTS.get(level, "")


@register.filter
def pretty_json(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


@register.filter
def duration(value: timedelta | None) -> str:
    """3m 12s · 1h 02m · 2d 3h."""
    if value is None:
        return "—"
    seconds = max(0, int(value.total_seconds()))
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


@register.filter
def waited(approval: ApprovalRequest) -> str:
    return duration(selectors.waited(approval))


def _when(moment) -> str:
    return timezone.localtime(moment, timezone.get_fixed_timezone(0)).strftime("%Y-%m-%d %H:%M:%S UTC")


@register.filter
def decision_line(approval: ApprovalRequest) -> str:
    """'Approved by X at T', 'Rejected by X at T', or the expired line."""
    status = approval.effective_status()
    if status == Status.EXPIRED:
        return EXPIRED_LINE
    if status == Status.PENDING:
        return "Waiting for a decision"
    who = approval.decided_by_email or "a deleted user"
    return f"{status.capitalize()} by {who} at {_when(approval.decided_at)}"


@register.filter
def when(moment) -> str:
    return _when(moment) if moment else "—"


@register.filter
def outcome_line(approval: ApprovalRequest) -> str:
    """What the engine reported after an approval: a separate fact from the decision."""
    if approval.effective_status() != Status.APPROVED:
        return "not run (halted)"
    if not approval.execution_status:
        return "outcome not reported"
    line = approval.get_execution_status_display().lower()
    if approval.execution_id:
        line += f" · {approval.execution_id}"
    return line


# The approver policy on cards, the history and the CLI ---------------------------------------

GRANT_DURATIONS = [(900, "15 minutes"), (3600, "1 hour"), (7200, "2 hours"), (14400, "4 hours"), (28800, "8 hours")]


@register.filter
def quorum_line(approval: ApprovalRequest) -> str:
    """'1 of 2 approvals — ana@acme.test' (the approving votes so far, oldest first)."""
    votes = approval.approving_votes()
    line = f"{len(votes)} of {approval.approvals_required} approval{'s' if approval.approvals_required != 1 else ''}"
    names = ", ".join(vote["by"] or "a deleted user" for vote in votes)
    return f"{line} — {names}" if names else line


@register.filter
def self_refused(approval: ApprovalRequest, user) -> bool:
    """Four eyes: the card hides Approve from the person the run acts for."""
    return selectors.refuses_self_approval(approval=approval, user=user)


@register.filter
def voted(approval: ApprovalRequest, user) -> bool:
    email = getattr(user, "email", "")
    return approval.approvals_required > 1 and any(vote["by"] == email for vote in approval.approving_votes())


@register.simple_tag
def still_may_approve(approval: ApprovalRequest, reviewers) -> str:
    """Who may still cast an approving vote on a quorum card ('none left' when nobody can)."""
    emails = selectors.may_still_approve(approval=approval, reviewers=reviewers)
    return ", ".join(emails) if emails else "nobody else — no reviewer is left who may approve"


@register.simple_tag
def grant_durations() -> list[tuple[int, str]]:
    return GRANT_DURATIONS
