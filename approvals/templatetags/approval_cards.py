"""How an approval request reads on a card and in the history, in one place for every template."""

import json
from datetime import timedelta

from django import template
from django.utils import timezone

from approvals import selectors
from approvals.models import ApprovalRequest, Status
from hitl_portal.visible import visible

register = template.Library()

register.filter("card_title", selectors.card_title)
register.filter("meter_percent", selectors.meter_percent)
# Every engine-supplied string on a card or in the history goes through this (hitl_portal/visible.py).
register.filter("visible", visible)


@register.filter
def visible_lines(text) -> str:
    """Multi-line text (a summary, pretty JSON): line breaks kept, every other control made visible."""
    return visible(text, keep_newlines=True)


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
    # JSON escapes control characters itself; bidi and zero-width ones it leaves raw.
    return visible(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False), keep_newlines=True)


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
        line += f" · {visible(approval.execution_id)}"
    return line
