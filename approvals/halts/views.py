"""The pages' "Halt this run" button (reviewers) and "Freeze workspace" switch (admins): approvals/halts/services.py."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from approvals.exceptions import ApprovalNotFound, ReasonTooLong
from approvals.halts.services import ReasonRequired, run_halt, run_resume, workspace_freeze, workspace_thaw
from approvals.presenters.text import visible
from approvals.review import selectors
from approvals.review.permissions import may_decide
from workspaces.decorators import member_required


def _back(request: HttpRequest) -> HttpResponse:
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return redirect(back)
    return redirect("approvals:queue")


def _run_of(request: HttpRequest) -> str | None:
    """The run of the request the form names (`approval`): the form never carries the engine's text itself."""
    try:
        approval = selectors.approval_get(workspace=request.actor.workspace, public_id=request.POST.get("approval", ""))
    except ApprovalNotFound as missing:
        raise Http404(missing.message) from None
    return approval.run_id


def _said(halted) -> str:
    grants = f", {halted.grants_revoked} run grant(s) revoked" if halted.grants_revoked else ""
    return f"{halted.rejected} pending request(s) rejected{grants}; every later one is rejected too."


@require_POST
@member_required
def halt_run(request: HttpRequest) -> HttpResponse:
    if not may_decide(request.actor):
        raise PermissionDenied("Only a reviewer or an admin of this workspace may halt a run.")
    run_id = _run_of(request)
    try:
        halted = run_halt(
            workspace=request.actor.workspace, user=request.user, run_id=run_id, reason=request.POST.get("reason", "")
        )
    except (ReasonRequired, ReasonTooLong) as refused:
        messages.error(request, f"Run {visible(run_id)} was not halted: {refused.message}")
        return _back(request)
    messages.success(request, f"Run {visible(run_id)} halted: {_said(halted)}")
    return _back(request)


@require_POST
@member_required
def resume_run(request: HttpRequest) -> HttpResponse:
    if not may_decide(request.actor):
        raise PermissionDenied("Only a reviewer or an admin of this workspace may resume a run.")
    run_id = _run_of(request)
    if run_resume(workspace=request.actor.workspace, user=request.user, run_id=run_id):
        messages.success(request, f"Run {visible(run_id)} resumed: its later requests wait for a reviewer again.")
    return _back(request)


@require_http_methods(["GET", "POST"])
@member_required
def freeze(request: HttpRequest) -> HttpResponse:
    """GET: the confirmation — what a freeze does and how many pending requests it rejects; POST: do it."""
    if not request.actor.is_admin:
        raise PermissionDenied("Only a workspace admin may freeze or thaw the workspace.")
    if request.method == "GET":
        workspace = request.actor.workspace
        ctx = {"tab": "approvals", "config": None, "pending": selectors.pending_count(workspace=workspace)}
        return render(request, "approvals/freeze.html", ctx)
    if request.POST.get("thaw"):
        if workspace_thaw(workspace=request.actor.workspace, user=request.user):
            messages.success(request, "Workspace thawed: later requests wait for a reviewer again.")
        return _back(request)
    try:
        halted = workspace_freeze(
            workspace=request.actor.workspace, user=request.user, reason=request.POST.get("reason", "")
        )
    except (ReasonRequired, ReasonTooLong) as refused:
        messages.error(request, f"The workspace was not frozen: {refused.message}")
        return _back(request)
    messages.success(request, f"Workspace frozen: {_said(halted)}")
    return _back(request)
