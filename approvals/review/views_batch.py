"""Deciding several requests from the Approvals tab: select, review every item in full, confirm.

The confirmation goes through the API's batch (approvals/review/batch.py): each item decided as if alone,
and what was not decided is listed with why.
"""

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET, require_http_methods

from approvals.exceptions import ApprovalsNotFound
from approvals.presenters.facts import card_title, facts
from approvals.review import selectors
from approvals.review.batch import BATCH_MAX, approvals_decide_batch
from approvals.review.decide import REASON_MAX
from approvals.review.permissions import DECIDERS_ONLY, may_decide
from workspaces.decorators import member_required


@require_GET
@member_required
def select(request: HttpRequest) -> HttpResponse:
    """Every pending request (oldest first, the queue's limit) with a checkbox."""
    if not may_decide(request.actor):
        raise PermissionDenied(DECIDERS_ONLY)
    pending = list(selectors.approvals_for(request.actor.workspace).pending().order_by("created_at", "id")[:BATCH_MAX])
    rows = [{"approval": approval, "title": card_title(approval)} for approval in pending]
    return render(request, "approvals/batch_select.html", {"tab": "approvals", "config": None, "rows": rows})


@require_http_methods(["GET", "POST"])
@member_required
def review(request: HttpRequest) -> HttpResponse:
    """GET: the chosen requests, each in full, and one decision with one reason. POST: decide them."""
    if not may_decide(request.actor):
        raise PermissionDenied(DECIDERS_ONLY)
    workspace = request.actor.workspace
    source = request.POST if request.method == "POST" else request.GET
    ids = list(dict.fromkeys(source.getlist("ids")))[: BATCH_MAX + 1]
    ctx = {"tab": "approvals", "config": None, "error": "", "reason_max": REASON_MAX}
    if not ids or len(ids) > BATCH_MAX:
        ctx["error"] = f"Choose 1–{BATCH_MAX} requests."
        return render(request, "approvals/batch_review.html", {**ctx, "items": []}, status=400)
    if request.method == "POST":
        decision = source.get("decision", "")
        reason = source.get("reason", "")
        if decision not in ("approve", "reject") or len(reason) > REASON_MAX:
            ctx["error"] = f"Choose Approve or Reject, with a reason of at most {REASON_MAX:,} characters."
        else:
            try:
                results = approvals_decide_batch(
                    workspace=workspace, user=request.user, ids=ids, decision=decision, reason=reason
                )
            except ApprovalsNotFound as missing:
                ctx["error"] = missing.message
            else:
                by_id = {
                    approval.public_id: approval
                    for approval in selectors.approvals_for(workspace).filter(public_id__in=ids)
                }
                done = [{"result": result, "title": card_title(by_id[result.id])} for result in results]
                return render(request, "approvals/batch_done.html", {**ctx, "done": done, "decision": decision})
    found = {approval.public_id: approval for approval in selectors.approvals_for(workspace).filter(public_id__in=ids)}
    items = [
        {"approval": found[public_id], "title": card_title(found[public_id]), "facts": facts(found[public_id])}
        for public_id in ids
        if public_id in found
    ]
    if len(items) < len(ids) and not ctx["error"]:
        ctx["error"] = "Some chosen requests are not in this workspace; they are left out."
    return render(request, "approvals/batch_review.html", {**ctx, "items": items}, status=400 if ctx["error"] else 200)
