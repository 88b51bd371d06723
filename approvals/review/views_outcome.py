"""The request page's in-doubt form: a reviewer records what happened to a call its engine started and never
reported (docs/receipts.md, "Run once")."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from approvals.engine.outcome import record_in_doubt_outcome
from approvals.exceptions import ApprovalNotFound
from approvals.review import selectors
from common.exceptions import DomainError
from workspaces.decorators import member_required


@require_POST
@member_required
def record_outcome(request: HttpRequest, public_id: str) -> HttpResponse:
    if not request.actor.can_review:
        raise PermissionDenied("Only reviewers and admins record what happened to a call.")
    try:
        approval = selectors.approval_get(workspace=request.actor.workspace, public_id=public_id)
    except ApprovalNotFound as missing:
        raise Http404(missing.message) from None
    status = request.POST.get("status", "")
    try:
        record_in_doubt_outcome(
            approval=approval, user=request.user, status=status, detail=request.POST.get("detail", "")
        )
    except DomainError as refused:
        messages.error(request, f"The outcome was not recorded: {refused.message}")
    else:
        messages.success(request, f"Recorded: the call {status}. The record names you.")
    return redirect("approvals:detail", public_id=public_id)
