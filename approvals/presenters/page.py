"""The request's page: what a decided request shows of its edit and of what its engine reported running."""

from approvals.edits import checks as edits
from approvals.models import ApprovalRequest
from approvals.presenters.facts import outcome_line
from approvals.presenters.text import visible, visible_lines, when


def diff_lines(proposed: object, approved: object) -> list[tuple[str, str]]:
    return [(kind, visible(line)) for kind, line in edits.edit_diff(proposed, approved)]


def edit_summary(approval: ApprovalRequest) -> dict | None:
    """A decided request's edit (the diff proposed → approved, both digests), or None when it was not edited."""
    if not edits.was_edited(approval):
        return None
    return {
        "diff": diff_lines(approval.arguments, edits.decision_arguments(approval)),
        "proposed_digest": approval.call_digest,
        "approved_digest": edits.decision_digest(approval),
    }


def execution_report(approval: ApprovalRequest) -> dict | None:
    """What the engine reported running, for the request's page: the outcome line (executed or failed, its
    execution id), its detail and when; None while nothing was reported."""
    if not approval.execution_status:
        return None
    return {
        "status": approval.execution_status,
        "line": outcome_line(approval),
        "detail": visible_lines(approval.execution_detail) if approval.execution_detail else "",
        "at": when(approval.executed_at) if approval.executed_at else "",
    }
