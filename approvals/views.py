"""The Approvals tab: the live queue, deciding from a card, and the history."""

from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from rules.selectors import configs_for
from workspaces.decorators import member_required

from . import selectors
from .forms import DecisionForm, HistoryFilterForm
from .models import ApprovalRequest
from .services import WrongDecision, approval_decide
from .templatetags.approval_cards import decision_line


def _queue_context(request: HttpRequest) -> dict:
    cards, more = selectors.pending_queue(workspace=request.actor.workspace)
    return {"cards": cards, "more": more, "limit": selectors.QUEUE_LIMIT}


@require_GET
@member_required
def queue(request: HttpRequest) -> HttpResponse:
    ctx = {"tab": "approvals", "config": None, "refresh_seconds": settings.APPROVALS_REFRESH_SECONDS}
    if request.actor.workspace.hitl_available:
        ctx.update(_queue_context(request))
    return render(request, "approvals/queue.html", ctx)


@require_GET
@member_required
def queue_cards(request: HttpRequest) -> HttpResponse:
    """The partial htmx swaps into the queue on every refresh."""
    if not request.actor.workspace.hitl_available:
        return render(request, "approvals/_queue.html", {"cards": [], "more": False})
    return render(request, "approvals/_queue.html", _queue_context(request))


@require_POST
@member_required
def decide(request: HttpRequest, public_id: str) -> HttpResponse:
    if not request.actor.can_review:
        raise PermissionDenied("Only a reviewer or an admin of this workspace may decide.")
    try:
        approval = selectors.approval_get(workspace=request.actor.workspace, public_id=public_id)
    except ApprovalRequest.DoesNotExist:
        raise Http404("No such approval request in this workspace.") from None
    form = DecisionForm(request.POST)
    error = ""
    if form.is_valid():
        try:
            approval, already = approval_decide(
                approval=approval,
                user=request.user,
                decision=form.cleaned_data["decision"],
                reason=form.cleaned_data["reason"],
            )
        except WrongDecision as wrong:
            error = str(wrong)
    else:
        error = " ".join(e for errors in form.errors.values() for e in errors)
    if error:
        if request.htmx:
            # 200, so htmx swaps the card back in with the error beside the buttons.
            return render(request, "approvals/_card.html", {"approval": approval, "error": error})
        messages.error(request, error)
        return redirect("approvals:queue")
    if not request.htmx:
        messages.success(request, _outcome_text(approval, already))
        return redirect("approvals:queue")
    ctx = {"approval": approval, "already": already, "outcome": _outcome_text(approval, already)}
    return render(request, "approvals/_decided.html", ctx)


def _outcome_text(approval: ApprovalRequest, already: bool) -> str:
    """What the reviewer is told after pressing a button: their decision, or the first one."""
    line = decision_line(approval)
    if already and approval.status != "expired":
        return f"Already {line[0].lower()}{line[1:]}"
    return line


@require_GET
@member_required
def history(request: HttpRequest) -> HttpResponse:
    workspace = request.actor.workspace
    configs = list(configs_for(workspace).only("public_id", "name").order_by("name", "id"))
    form = HistoryFilterForm(request.GET or None, configs=configs)
    ctx = {"tab": "approvals", "config": None, "form": form, "rows": [], "next_cursor": None}
    if workspace.hitl_available:
        filters = form.filters() if request.GET else selectors.HistoryFilters()
        rows, next_cursor = selectors.history_page(
            workspace=workspace, filters=filters, cursor=request.GET.get("cursor", "")
        )
        query = request.GET.copy()
        query.pop("cursor", None)
        if next_cursor:
            query["cursor"] = next_cursor
        ctx.update(rows=rows, next_cursor=next_cursor, next_query=query.urlencode())
    if request.actor.is_admin:
        ctx["audit_query"] = _audit_range(filters=form.filters() if request.GET else selectors.HistoryFilters())
    return render(request, "approvals/history.html", ctx)


def _audit_range(*, filters) -> str:
    """The history's date range as the audit export's since/until (whole UTC days, To inclusive)."""
    query = QueryDict(mutable=True)
    if filters.date_from:
        query["since"] = f"{filters.date_from.isoformat()}T00:00:00Z"
    if filters.date_to:
        query["until"] = f"{(filters.date_to + timedelta(days=1)).isoformat()}T00:00:00Z"
    return query.urlencode()
