"""A run's story for the request page: every request of the run so far, in order, as one line each."""

from approvals.models import ApprovalRequest
from approvals.presenters.facts import card_title, decided_by, outcome_line, outcome_word
from approvals.presenters.text import when
from collaboration.selectors import RUN_PAGE_MAX, run_requests
from workspaces.models import Workspace


def run_story(*, workspace: Workspace, approval: ApprovalRequest) -> dict:
    """The rows of "This run so far" (this request marked), and whether the run has more than a page."""
    rows, more = run_requests(workspace=workspace, run_id=approval.run_id, limit=RUN_PAGE_MAX)
    return {
        "rows": [
            {
                "id": row.public_id,
                "this": row.pk == approval.pk,
                "kind": row.get_kind_display(),
                "title": card_title(row),
                "status": row.effective_status(),
                "outcome": outcome_word(row),
                "who": decided_by(row),
                "at": when(row.created_at),
                "ran": outcome_line(row) if row.effective_status() == "approved" else "",
            }
            for row in rows
        ],
        "more": more,
    }
