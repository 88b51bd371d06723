"""A run's story for the request page: every request of the run so far, in order, as one line each."""

from django.urls import reverse
from django.utils.html import format_html

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
        title = (
            format_html("<strong>{}</strong> (this request)", card_title(row))
            if row.pk == approval.pk
            else format_html('<a href="{}">{}</a>', page_url.replace(_MARK, row.public_id), card_title(row))
        )
        details = [row.get_kind_display(), when(row.created_at), decided_by(row)]
        if status == Status.APPROVED and row.kind == "gate":
            details.append(outcome_line(row))
        # Each line escaped by format_html: a thousand lines through the template language cost more than the
        # rest of the page (its variable lookups), so the list is drawn here.
        lines.append(
            format_html(
                '<li class="story-row {}{}"><span class="badge {}">{}</span> {} <span class="muted">· {}</span></li>',
                status,
                " this" if row.pk == approval.pk else "",
                status,
                outcome_word(row),
                title,
                " · ".join(detail for detail in details if detail),
            )
        )
    return {"rows": lines, "more": more}
