"""The request page's forms: comment, claim or release, snooze (the same services as the API and the CLI)."""

from datetime import timedelta

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from approvals.exceptions import ApprovalNotFound
from approvals.review import selectors as approval_selectors
from approvals.review.permissions import may_decide
from collaboration import services
from collaboration.models import CommentVia
from common.exceptions import DomainError
from workspaces.decorators import member_required

# The page's "Not now" choices, in hours.
SNOOZE_HOURS = (1, 4, 24)


def _approval(request: HttpRequest, public_id: str):
    try:
        approval = approval_selectors.approval_get(workspace=request.actor.workspace, public_id=public_id)
    except ApprovalNotFound as missing:
        raise Http404(missing.message) from None
    if not may_decide(request.actor, approval):
        raise PermissionDenied("Only reviewers and admins of this workspace may do this.")
    return approval


def _back(request: HttpRequest, approval, anchor: str = "") -> HttpResponse:
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return redirect(back)
    return redirect(reverse("approvals:detail", args=[approval.public_id]) + anchor)


@require_POST
@member_required
def comment(request: HttpRequest, public_id: str) -> HttpResponse:
    approval = _approval(request, public_id)
    try:
        services.comment_add(
            approval=approval, user=request.user, text=request.POST.get("text", ""), via=CommentVia.PAGE
        )
    except DomainError as refused:
        messages.error(request, refused.message)
    return _back(request, approval, "#comments")


@require_POST
@member_required
def claim(request: HttpRequest, public_id: str) -> HttpResponse:
    approval = _approval(request, public_id)
    try:
        if request.POST.get("release"):
            services.claim_release(approval=approval, user=request.user, is_admin=request.actor.is_admin)
        else:
            services.claim_take(approval=approval, user=request.user)
    except DomainError as refused:
        messages.error(request, refused.message)
    return _back(request, approval, "#people")


@require_POST
@member_required
def snooze(request: HttpRequest, public_id: str) -> HttpResponse:
    approval = _approval(request, public_id)
    hours = request.POST.get("hours", "")
    if not hours.isdigit() or int(hours) not in SNOOZE_HOURS:
        messages.error(request, "Choose how long: 1, 4 or 24 hours.")
        return _back(request, approval, "#people")
    try:
        services.snooze_set(approval=approval, user=request.user, until=timezone.now() + timedelta(hours=int(hours)))
    except DomainError as refused:
        messages.error(request, refused.message)
        return _back(request, approval, "#people")
    messages.success(request, f"Hidden from your queue for {hours} hour(s); others still see it.")
    return redirect("approvals:queue")
