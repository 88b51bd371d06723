"""Passkey pages and their JSON steps: the account page's section (register, rename, remove) and a
request page's step-up challenge. The browser side is static/js/passkeys.js."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_POST

from approvals.edits.checks import approved_call, parse_edited
from approvals.exceptions import ApprovalNotFound
from approvals.review import selectors as approval_selectors
from approvals.review.permissions import DECIDERS_ONLY, may_decide
from common.errors import DOMAIN_ERRORS, error_body
from common.exceptions import DomainError
from workspaces.decorators import member_required

from . import selectors, services
from .reauth import assertion_from, reauth_check, reauth_options
from .stepup import step_up_options

ACCOUNT = "account"


def _refused(exc: DomainError) -> JsonResponse:
    status_code, code = next(answer for cls, answer in DOMAIN_ERRORS.items() if isinstance(exc, cls))
    return JsonResponse(error_body(code, exc.message), status=status_code)


def _json_body(request: HttpRequest) -> dict:
    """The JSON object the page's script sent; {} for anything else (a form post, bad JSON, a list)."""
    if request.content_type != "application/json":
        return {}
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        body = None
    return body if isinstance(body, dict) else {}


@login_required
@require_POST
def confirm_options(request: HttpRequest) -> JsonResponse:
    """A challenge for confirming it is you with one of your passkeys, before adding or removing one."""
    try:
        return JsonResponse(reauth_options(user=request.user))
    except DomainError as refused:
        return _refused(refused)


@login_required
@require_POST
def registration_options(request: HttpRequest) -> JsonResponse:
    """The registration challenge, issued only with proof beyond the session: `password` or `assertion`."""
    body = _json_body(request)
    try:
        confirmed_with = reauth_check(
            request=request,
            user=request.user,
            password=body.get("password"),
            assertion=body.get("assertion"),
            now=timezone.now(),
        )
        return JsonResponse(services.passkey_registration_options(user=request.user, confirmed_with=confirmed_with))
    except DomainError as refused:
        return _refused(refused)


@login_required
@require_POST
def register(request: HttpRequest) -> JsonResponse:
    body = _json_body(request)
    try:
        passkey = services.passkey_register(user=request.user, name=body.get("name"), credential=body.get("credential"))
    except DomainError as refused:
        return _refused(refused)
    messages.success(request, f"Passkey “{passkey.name}” registered: you may approve step-up requests with it.")
    return JsonResponse({"id": passkey.public_id, "name": passkey.name}, status=201)


@login_required
@require_POST
def rename(request: HttpRequest, public_id: str) -> HttpResponse:
    passkey = selectors.passkey_get(user=request.user, public_id=public_id)  # 404 via DomainErrorPages
    try:
        services.passkey_rename(passkey=passkey, name=request.POST.get("name"))
    except DomainError as refused:
        messages.error(request, refused.message)
    else:
        messages.success(request, f"Passkey renamed “{passkey.name}”.")
    return redirect(ACCOUNT)


@login_required
@require_POST
def remove(request: HttpRequest, public_id: str) -> HttpResponse:
    passkey = selectors.passkey_get(user=request.user, public_id=public_id)
    try:
        confirmed_with = reauth_check(
            request=request,
            user=request.user,
            password=request.POST.get("password"),
            assertion=assertion_from(request.POST.get("assertion")),
            now=timezone.now(),
        )
        services.passkey_remove(passkey=passkey, confirmed_with=confirmed_with)
    except DomainError as refused:
        messages.error(request, refused.message)
    else:
        messages.success(request, f"Passkey “{passkey.name}” removed: it approves nothing any more.")
    return redirect(ACCOUNT)


@require_POST
@member_required
def step_up(request: HttpRequest, public_id: str) -> JsonResponse:
    """A challenge bound to this request, for approving it with a passkey on its page."""
    if not may_decide(request.actor):
        raise PermissionDenied(DECIDERS_ONLY)
    try:
        approval = approval_selectors.approval_get(workspace=request.actor.workspace, public_id=public_id)
    except ApprovalNotFound as missing:
        raise Http404(missing.message) from None
    try:
        return JsonResponse(
            step_up_options(approval=approval, user=request.user, approved_digest=_approved_digest(request, approval))
        )
    except DomainError as refused:
        return _refused(refused)


def _approved_digest(request: HttpRequest, approval) -> str:
    """The digest of the call the reviewer is about to approve: the editor's arguments when the page sent them
    (checked as the decision will check them), else the proposal's."""
    text = _json_body(request).get("arguments")
    if not isinstance(text, str):
        return approved_call(approval=approval, decision="approve").digest
    return approved_call(approval=approval, decision="approve", arguments=parse_edited(text), edit=True).digest


def account_section(request: HttpRequest) -> dict:
    """The account page's Passkeys section (templates/passkeys/_account.html): the person's passkeys."""
    return {"template": "passkeys/_account.html", "passkeys": list(selectors.passkeys_of(request.user))}
