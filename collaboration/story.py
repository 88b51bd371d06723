"""A run's story for the request page: every request of the run so far, in order, as one line each."""

from django.urls import reverse

from approvals.models import ApprovalRequest, Status
from approvals.presenters.facts import card_title, decided_by, outcome_line, outcome_word
from approvals.presenters.text import when
from collaboration.selectors import RUN_PAGE_MAX, run_requests
from workspaces.models import Workspace

_MARK = "apr_mark"


def run_story(*, workspace: Workspace, approval: ApprovalRequest) -> dict:
    """The rows of "This run so far" (this request marked), and whether the run has more than a page."""
    rows, more = run_requests(workspace=workspace, run_id=approval.run_id, limit=RUN_PAGE_MAX, brief=True)
    # One reverse() for the page, not one a line: a run of a thousand requests would spend a tenth of its time here.
    page_url = reverse("approvals:detail", args=[_MARK])
    lines = []
    for row in rows:
        status = row.effective_status()
        lines.append(
            {
                "url": page_url.replace(_MARK, row.public_id),
                "this": row.pk == approval.pk,
                "kind": row.get_kind_display(),
                "title": card_title(row),
                "status": status,
                "outcome": outcome_word(row),
                "who": decided_by(row),
                "at": when(row.created_at),
                "ran": outcome_line(row) if status == Status.APPROVED and row.kind == "gate" else "",
            }
        )
    return {"rows": lines, "more": more}
