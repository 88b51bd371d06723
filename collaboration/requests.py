"""The requester's side on the pages: "My requests" (what was asked on my behalf, how it ended, what people
said) and withdrawing one (approvals/review/withdraw.py, as the API does)."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_POST

from approvals.exceptions import ReasonTooLong
from approvals.presenters.facts import card_title, decision_line, outcome_word
from approvals.presenters.text import visible_lines, when
from approvals.review import selectors as approval_selectors
from approvals.review.withdraw import approval_withdraw, may_withdraw
from collaboration.models import Comment
from collaboration.presenters import comment_line
from collaboration.views import _approval, _back
from workspaces.decorators import member_required

MY_REQUESTS_SHOWN = 100


@require_GET
@member_required
def my_requests(request: HttpRequest) -> HttpResponse:
    rows, more = approval_selectors.history_page(
        workspace=request.actor.workspace,
        filters=approval_selectors.HistoryFilters(include_pending=True, requested_by=request.user.email),
        page_size=MY_REQUESTS_SHOWN,
    )
    said: dict[int, list] = {}
    for comment in Comment.objects.filter(approval__in=rows).order_by("created_at", "id"):
        said.setdefault(comment.approval_id, []).append(comment_line(comment))
    items = [
        {
            "approval": approval,
            "title": card_title(approval),
            "status": approval.effective_status(),
            "outcome": outcome_word(approval),
            "line": decision_line(approval),
            "reason": visible_lines(approval.reason) if approval.reason and approval.status != "expired" else "",
            "asked_at": when(approval.created_at),
            "pending": approval.is_pending(),
            "comments": said.get(approval.pk, []),
        }
        for approval in rows
    ]
    ctx = {"tab": "my-requests", "config": None, "items": items, "more": bool(more), "shown": MY_REQUESTS_SHOWN}
    return render(request, "collaboration/my_requests.html", ctx)


@require_POST
@member_required
def withdraw(request: HttpRequest, public_id: str) -> HttpResponse:
    approval = _approval(request, public_id)
    if not may_withdraw(request.actor, approval):
        raise PermissionDenied("Only the person the run acts for may withdraw it.")
    try:
        approval, already = approval_withdraw(
            approval=approval, actor=request.actor, reason=request.POST.get("reason", "")
        )
    except ReasonTooLong as refused:
        messages.error(request, refused.message)
        return _back(request, approval)
    if already:
        messages.error(request, f"It had ended already: {decision_line(approval)}.")
    else:
        messages.success(request, "Withdrawn: the agent has been told to stop; nobody can decide it now.")
    return _back(request, approval)
