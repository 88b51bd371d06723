"""The Approvals tab: the live queue, deciding from a card, and the history."""

from datetime import date, timedelta

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from approvals import extensions
from approvals.edits.checks import may_edit
from approvals.exceptions import ApprovalNotFound, EditedArgumentsInvalid, SelfApproval, WrongDecision
from approvals.expiry.expire import approval_expire_if_overdue
from approvals.expiry.undeliverable import approval_mark_opened
from approvals.grants.services import grant_revoke as grant_revoke_service
from approvals.halts.services import run_halted
from approvals.presenters import card as card_presenter
from approvals.presenters import page as page_presenter
from approvals.presenters.facts import decided_line, decision_line, mismatch_warning, quorum_line
from approvals.questions.validate import answers_from_form
from approvals.review import selectors
from approvals.review.always import always_check, always_record
from approvals.review.card_cache import rendered_cards
from approvals.review.decide import approval_decide, link_decide
from approvals.review.forms import DecisionForm, HistoryFilterForm
from approvals.review.links import LinkRefused, link_open
from approvals.review.permissions import DECIDERS_ONLY, may_decide
from audit.selectors import audit_head
from contacts.models import Delivery
from contacts.presenters import delivery_rows
from passkeys.exceptions import PasskeyRefused, PasskeyRequired
from passkeys.policy import needs_passkey
from passkeys.stepup import step_up_from
from people.exceptions import NotAnApprover
from rules.selectors import configs_for
from workspaces.decorators import member_required


def _queue_context(request: HttpRequest) -> dict:
    workspace = request.actor.workspace
    pending, more = selectors.pending_queue(
        workspace=workspace, hidden=tuple(extensions.queue_hidden(request.actor)), extra=extensions.queue_extra()
    )
    # Who may still vote is shown on quorum cards only; one query for the whole queue.
    reviewers = selectors.reviewer_emails(workspace) if any(entry.quorum for entry in pending) else []
    return {
        "cards": rendered_cards.cards(
            request,
            pending,
            workspace=workspace,
            reviewers=reviewers,
            strips=extensions.queue_strips(request, pending),
        ),
        "more": more,
        "limit": selectors.QUEUE_LIMIT,
        # What a single card (after a decision, or on its own page) is given: set here, a missing
        # variable costs the template engine an exception on every card.
        "notice": "",
        "error": "",
        "next": "",
    }


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
        return render(request, "approvals/_queue.html", {"cards": [], "more": False, "limit": selectors.QUEUE_LIMIT})
    return render(request, "approvals/_queue.html", _queue_context(request))


@require_POST
@member_required
def decide(request: HttpRequest, public_id: str) -> HttpResponse:
    # Long: one form post, and each answer the card gives (an error, a vote, a decision; htmx or not).
    if not may_decide(request.actor):
        raise PermissionDenied(DECIDERS_ONLY)
    try:
        approval = selectors.approval_get(workspace=request.actor.workspace, public_id=public_id)
    except ApprovalNotFound as missing:
        raise Http404(missing.message) from None
    if not may_decide(request.actor, approval):
        raise PermissionDenied(DECIDERS_ONLY)
    form = DecisionForm(request.POST)
    error = ""
    if form.is_valid():
        proposed = form.proposed_condition()
        try:
            rule = always_check(approval=approval, decision="approve", condition=proposed) if proposed else None
            arguments, edit = form.edit()
            approval, already = approval_decide(
                approval=approval,
                user=request.user,
                decision=form.cleaned_data["decision"],
                reason=form.cleaned_data["reason"],
                grant_ttl_seconds=form.grant_ttl(),
                # The page alone can pass step-up: its script signs a challenge bound to this request.
                step_up=step_up_from(request.POST.get("passkey_assertion", "")),
                arguments=arguments,
                edit=edit,
                answers=answers_from_form(approval.questions, request.POST) if approval.questions else None,
            )
            if rule is not None:
                always_record(approval=approval, rule=rule, condition=proposed, user=request.user, already=already)
        except EditedArgumentsInvalid as invalid:
            error = f"{invalid.field}: {invalid.message}"  # the path in the arguments, as the API names it
        except WrongDecision as wrong:
            error = wrong.message
        except (SelfApproval, NotAnApprover, PasskeyRequired, PasskeyRefused) as refused:
            error = refused.message
        except ValidationError as refused:  # the proposed condition (approvals/review/always.py)
            error = " ".join(refused.messages)
    else:
        error = " ".join(e for errors in form.errors.values() for e in errors)
    if error or approval.is_pending():
        # An error, or a vote that leaves a quorum request pending: the card stays, updated.
        notice = "" if error else ("You had already approved it." if already else "Your approval is recorded.")
        if request.htmx:
            # 200, so htmx swaps the card back in with the error (or the vote) beside the buttons.
            reviewers = selectors.reviewer_emails(request.actor.workspace)
            card = card_presenter.card(approval, user=request.user, reviewers=reviewers)
            ctx = {"card": card, "error": error, "notice": notice}
            return render(request, "approvals/_card.html", ctx)
        if error:
            messages.error(request, error)
        else:
            messages.success(request, f"{notice} {quorum_line(approval)}.")
        back = request.POST.get("next", "")
        if error and back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            return redirect(back)  # the request's page: the answers to fix are there
        return redirect("approvals:queue")
    if not request.htmx:
        messages.success(request, decided_line(approval, already=already))
        back = request.POST.get("next", "")
        if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
            return redirect(back)
        return redirect("approvals:queue")
    ctx = {"approval": approval, "already": already, "outcome": decided_line(approval, already=already)}
    return render(request, "approvals/_decided.html", ctx)


@require_POST
@member_required
def edit_check(request: HttpRequest, public_id: str) -> HttpResponse:
    """The card's arguments editor, checked as the reviewer types (htmx): each schema error by path, or the diff.

    Checked on the server, by the same approvals/edits/checks.py the decision is refused by: one JSON Schema
    implementation, the same paths and words as the API, and nothing to keep in step in the browser.
    """
    if not may_decide(request.actor):
        raise PermissionDenied(DECIDERS_ONLY)
    try:
        approval = selectors.approval_get(workspace=request.actor.workspace, public_id=public_id)
    except ApprovalNotFound as missing:
        raise Http404(missing.message) from None
    if not may_decide(request.actor, approval) or not may_edit(approval):
        raise PermissionDenied("Only a reviewer may edit the arguments, and only where the rule allows edits.")
    check = card_presenter.edit_check(approval, request.POST.get("arguments", ""))
    return render(request, "approvals/_edit_check.html", {"check": check, "card_id": approval.public_id})


@require_GET
@member_required
def history(request: HttpRequest) -> HttpResponse:
    workspace = request.actor.workspace
    configs = list(configs_for(workspace).only("public_id", "name").order_by("name", "id"))
    form = HistoryFilterForm(request.GET or None, configs=configs)
    ctx = {"tab": "approvals", "config": None, "form": form, "rows": [], "next_cursor": None}
    if workspace.hitl_available:
        filters = form.filters() if request.GET else selectors.HistoryFilters()
        extra = extensions.history_extra()
        rows, next_cursor = selectors.history_page(
            workspace=workspace, filters=filters, cursor=request.GET.get("cursor", ""), extra=extra
        )
        notes = extensions.history_notes(request, rows, list(extra))
        ctx["entries"] = [(row, notes.get(row.pk, "")) for row in rows]
        query = request.GET.copy()
        query.pop("cursor", None)
        # Both links keep the filters: the newest page is the same query without a cursor.
        ctx.update(rows=rows, next_cursor=next_cursor, newest_query=query.urlencode(), paged="cursor" in request.GET)
        if next_cursor:
            query["cursor"] = next_cursor
        ctx["next_query"] = query.urlencode()
    if request.actor.is_admin:
        ctx["audit_query"] = _audit_range(filters=form.filters() if request.GET else selectors.HistoryFilters())
        # The anchor to note down: `hitl audit verify --anchor` later proves the log still holds it.
        seq, hash_ = audit_head(workspace_id=workspace.pk)
        ctx["audit_anchor"] = f"{seq}:{hash_[:16]}"
    return render(request, "approvals/history.html", ctx)


@require_GET
@member_required
def detail(request: HttpRequest, public_id: str) -> HttpResponse:
    """A request's page: its card and decision form while pending, its history once decided, its deliveries."""
    try:
        approval = selectors.approval_get(workspace=request.actor.workspace, public_id=public_id)
    except ApprovalNotFound as missing:
        raise Http404(missing.message) from None
    approval = approval_expire_if_overdue(approval=approval)
    # A member read it: the request reached a person, whatever its notifications did (undeliverable).
    approval_mark_opened(approval=approval)
    deliveries = Delivery.objects.filter(approval=approval).order_by("created_at", "id")
    ctx = {
        "tab": "approvals",
        "config": None,
        "approval": approval,
        "pending": approval.is_pending(),
        "can_review": may_decide(request.actor, approval),
        "outcome": "" if approval.is_pending() else decision_line(approval),
        "deliveries": delivery_rows(deliveries),
        "edit": page_presenter.edit_summary(approval),
        "digest_warning": mismatch_warning(approval),
        "execution": page_presenter.execution_report(approval),
        "run_halt": run_halted(workspace=request.actor.workspace, run_id=approval.run_id),
        "sections": extensions.page_sections(request, approval),
    }
    if ctx["pending"] and ctx["can_review"]:
        # Who may still vote, on a quorum request's card (as in the queue).
        reviewers = selectors.reviewer_emails(request.actor.workspace) if approval.approvals_required > 1 else []
        ctx["card"] = card_presenter.card(approval, user=request.user, reviewers=reviewers)
    return render(request, "approvals/detail.html", ctx)


@require_http_methods(["GET", "HEAD", "POST"])
def link(request: HttpRequest, token: str) -> HttpResponse:
    """A one-click link: GET (and HEAD) only shows the confirm page — mail scanners open links — POST decides."""
    try:
        opened = link_open(token)
        if request.method == "POST":
            form = DecisionForm(request.POST)
            if not form.is_valid():
                return render(
                    request, "approvals/link.html", {"link": opened, "token": token, "form": form}, status=400
                )
            try:
                approval, already = link_decide(
                    token=token, decision=form.cleaned_data["decision"], reason=form.cleaned_data["reason"]
                )
            except PasskeyRequired as refused:
                ctx = {"approval": opened.approval, "refused": refused}
                return render(request, "passkeys/link_passkey_required.html", ctx, status=403)
            return render(
                request, "approvals/link_done.html", {"approval": approval, "outcome": decision_line(approval)}
            )
    except LinkRefused as refused:
        return render(request, "approvals/link_refused.html", {"refused": refused}, status=403)
    except WrongDecision as wrong:
        return render(request, "approvals/link.html", {"link": opened, "token": token, "error": str(wrong)}, status=400)
    return render(
        request, "approvals/link.html", {"link": opened, "token": token, "step_up": needs_passkey(opened.approval)}
    )


def _audit_range(*, filters) -> str:
    """The history's date range as the audit export's since/until (whole UTC days, To inclusive)."""
    query = QueryDict(mutable=True)
    if filters.date_from:
        query["since"] = f"{filters.date_from.isoformat()}T00:00:00Z"
    if filters.date_to and filters.date_to < date.max:  # To 9999-12-31 means no end
        query["until"] = f"{(filters.date_to + timedelta(days=1)).isoformat()}T00:00:00Z"
    return query.urlencode()


@require_GET
@member_required
def grants(request: HttpRequest) -> HttpResponse:
    """Live run grants, newest first, with their uses; reviewers may revoke each."""
    if not may_decide(request.actor):
        raise PermissionDenied("Only a reviewer or an admin of this workspace sees its run grants.")
    rows = list(selectors.grants_for(request.actor.workspace, active=True)[: selectors.QUEUE_LIMIT])
    return render(request, "approvals/grants.html", {"tab": "approvals", "config": None, "grants": rows})


@require_POST
@member_required
def grant_revoke(request: HttpRequest, public_id: str) -> HttpResponse:
    if not may_decide(request.actor):
        raise PermissionDenied("Only a reviewer or an admin of this workspace may revoke a run grant.")
    grant = selectors.grant_get(workspace=request.actor.workspace, public_id=public_id)  # 404 via DomainErrorPages
    grant = grant_revoke_service(grant=grant, user=request.user)
    messages.success(
        request, f"Revoked {grant.public_id}: the next request of run {grant.run_id} waits for a reviewer."
    )
    return redirect("approvals:grants")
