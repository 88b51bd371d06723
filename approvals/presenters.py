"""How a request reads to a person — card, history, CLI, messages (and notifications) — in one place.

The API's shape is not here: that is `serializers.approval_as_dict`, the contract engines read.
"""

import json
from datetime import datetime, timedelta

from django.utils import timezone

from .models import ApprovalKind, ApprovalRequest, Status

POINT_WORDS = {"entry": "before the call", "exit": "before its result returns"}

LEVEL_HINTS = {
    "none": "This config passes only the target and operation (level none), so there is no summary or arguments.",
    "summary": "This config passes a short summary, not the exact arguments (level summary).",
    "full": "This config passes the exact arguments (level full): this is what will run.",
}

EXPIRED_LINE = "Expired — nobody answered; counted as rejected"


def _named(noun: str, target: str) -> str:
    """'cell 12' stays 'cell 12'; '12' becomes 'cell 12'."""
    if target.lower().startswith(noun + " "):
        return target
    return f"{noun} {target}".strip()


def card_title(approval: ApprovalRequest) -> str:
    """An imperative naming the act and its object (seed 000's card vocabulary)."""
    if approval.kind == ApprovalKind.TOKEN_CAP:
        return "Token cap reached"
    target = approval.target or "(no target given)"
    if approval.boundary == "delete":
        return f"Delete {target}"
    if approval.boundary == "mcp_server":
        return f"Call {approval.operation} on {target}" if approval.operation else f"Call {target}"
    if approval.boundary == "cell":
        return f"Run {_named('cell', approval.target)}"
    if approval.boundary == "worker":
        return f"Start {_named('worker', approval.target)}"
    return f"{approval.operation or 'Act on'} {target}"


def point_words(point: str) -> str:
    return POINT_WORDS.get(point, "")


def level_hint(level: str) -> str:
    return LEVEL_HINTS.get(level, "")


def waited_for(approval: ApprovalRequest, now: datetime | None = None) -> timedelta | None:
    """How long the request waited for its answer (to the deadline, for an expired one)."""
    status = approval.effective_status(now)
    if status == Status.EXPIRED:
        return approval.expires_at - approval.created_at
    if approval.decided_at:
        return approval.decided_at - approval.created_at
    return None


def waited(approval: ApprovalRequest) -> str:
    return duration(waited_for(approval))


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


def meter_percent(approval: ApprovalRequest) -> int:
    """The share of the cap used, for the meter (which stops at 100%)."""
    if not approval.token_cap or approval.tokens_used is None:
        return 100
    return max(0, min(100, round(approval.tokens_used * 100 / approval.token_cap)))


def cap_percent(approval: ApprovalRequest) -> int:
    """The share of the cap used, unclamped (the meter itself stops at 100%)."""
    if not approval.token_cap or approval.tokens_used is None:
        return 0
    return round(approval.tokens_used * 100 / approval.token_cap)


def thousands(value) -> str:
    """51200 → 51,200: token counts are read at a glance."""
    return f"{value:,}" if isinstance(value, int) else ""


def pretty_json(value) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def when(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    return timezone.localtime(moment, timezone.get_fixed_timezone(0)).strftime("%Y-%m-%d %H:%M:%S UTC")


def decision_line(approval: ApprovalRequest) -> str:
    """'Approved by X at T', 'Rejected by X at T', or the expired line."""
    status = approval.effective_status()
    if status == Status.EXPIRED:
        return EXPIRED_LINE
    if status == Status.PENDING:
        return "Waiting for a decision"
    who = approval.decided_by_email or "a deleted user"
    return f"{status.capitalize()} by {who} at {when(approval.decided_at)}"


def decided_line(approval: ApprovalRequest, *, already: bool) -> str:
    """What the person who pressed a button is told: their decision, or the first one if it came too late."""
    line = decision_line(approval)
    if already and approval.effective_status() != Status.EXPIRED:
        return f"Already {line[0].lower()}{line[1:]}"
    return line


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


# The approver policy: quorum progress, who may still approve, run grant durations -----------

GRANT_DURATIONS = [(900, "15 minutes"), (3600, "1 hour"), (7200, "2 hours"), (14400, "4 hours"), (28800, "8 hours")]


def quorum_line(approval: ApprovalRequest) -> str:
    """'1 of 2 approvals — ana@acme.test' (the approving votes so far, oldest first)."""
    from .selectors import approving_votes

    votes = approving_votes(approval)
    required = approval.approvals_required
    line = f"{len(votes)} of {required} approval{'s' if required != 1 else ''}"
    names = ", ".join(vote["by"] or "a deleted user" for vote in votes)
    return f"{line} — {names}" if names else line


def still_may_approve_line(emails: list[str]) -> str:
    return ", ".join(emails) if emails else "nobody else — no reviewer is left who may approve"
