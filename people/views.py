"""The People tab (admins: approver groups, every delegation) and the account page's delegation section."""

from datetime import UTC, datetime

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from common.exceptions import DomainError
from people import selectors, services
from people.exceptions import PeopleInvalid
from workspaces.decorators import admin_required, member_required


def _members(workspace) -> list[str]:
    return list(
        get_user_model()
        .objects.filter(memberships__workspace=workspace, is_active=True)
        .order_by("email")
        .values_list("email", flat=True)
    )


def _refused(request: HttpRequest, refusal: DomainError) -> None:
    messages.error(request, f"{refusal.field}: {refusal.message}" if refusal.field else refusal.message)


@require_GET
@admin_required
def people(request: HttpRequest) -> HttpResponse:
    workspace = request.actor.workspace
    ctx = {
        "tab": "people",
        "config": None,
        "groups": list(selectors.groups_for(workspace)),
        "members": _members(workspace),
        "delegations": list(selectors.delegations_for(workspace=workspace, live=True)),
    }
    return render(request, "people/people.html", ctx)


@require_POST
@admin_required
def group_create(request: HttpRequest) -> HttpResponse:
    try:
        group = services.group_create(
            workspace=request.actor.workspace, name=request.POST.get("name", ""), user=request.user
        )
        messages.success(request, f"Group {group.name} created ({group.public_id}): add its members below.")
    except DomainError as refusal:
        _refused(request, refusal)
    return redirect("people:people")


@require_POST
@admin_required
def group_member(request: HttpRequest, grp: str) -> HttpResponse:
    group = selectors.group_get(workspace=request.actor.workspace, public_id=grp)  # 404 via DomainErrorPages
    email = request.POST.get("email", "")
    try:
        if request.POST.get("remove"):
            services.group_member_remove(group=group, email=email, user=request.user)
        else:
            services.group_member_add(group=group, email=email, user=request.user)
    except DomainError as refusal:
        _refused(request, refusal)
    return redirect("people:people")


@require_POST
@admin_required
def delegation_end(request: HttpRequest, dlg: str) -> HttpResponse:
    delegation = selectors.delegations_for(workspace=request.actor.workspace).filter(public_id=dlg).first()
    if delegation is not None:
        services.delegation_end(delegation=delegation, user=request.user)
        messages.success(
            request, f"Ended: {delegation.delegate.email} no longer stands in for {delegation.delegator.email}."
        )
    return redirect("people:people")


def account_section(request: HttpRequest) -> dict:
    """The account page's delegation section (templates/people/_account.html): my stand-in, until when."""
    workspace = request.actor.workspace
    return {
        "template": "people/_account.html",
        "delegation": selectors.delegation_of(workspace=workspace, user=request.user),
        "members": [email for email in _members(workspace) if email != request.user.email],
    }


def _until(raw: str) -> datetime:
    """The form's `datetime-local`, read as UTC (the page says so)."""
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise PeopleInvalid("until", "Give the end as a date and time (UTC).") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@require_POST
@member_required
def my_delegation(request: HttpRequest) -> HttpResponse:
    workspace, user = request.actor.workspace, request.user
    try:
        if request.POST.get("end"):
            delegation = selectors.delegation_of(workspace=workspace, user=user)
            if delegation is not None:
                services.delegation_end(delegation=delegation, user=user)
            messages.success(request, "Your delegation has ended: requests wait for you again.")
        else:
            delegation = services.delegation_start(
                workspace=workspace,
                delegator=user,
                delegate_email=request.POST.get("delegate", ""),
                until=_until(request.POST.get("until", "")),
                reason=request.POST.get("reason", ""),
            )
            messages.success(
                request, f"{delegation.delegate.email} stands in for you until {delegation.until:%Y-%m-%d %H:%M} UTC."
            )
    except DomainError as refusal:
        _refused(request, refusal)
    return redirect(reverse("account") + "#delegation")
