"""Passkey pages and their JSON steps: the account page's section (register, rename, remove); a request
page's step-up challenge is approvals/review/step_up.py. The browser side is static/js/passkeys.js."""

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_POST

from common.errors import error_body
from common.exceptions import DomainError

from . import selectors, services
from .reauth import assertion_from, reauth_check, reauth_options

ACCOUNT = "account"


def refusal_response(exc: DomainError) -> JsonResponse:
    return JsonResponse(error_body(exc.code, exc.message), status=exc.status)


def json_body(request: HttpRequest) -> dict:
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
        return refusal_response(refused)


@login_required
@require_POST
def registration_options(request: HttpRequest) -> JsonResponse:
    """The registration challenge, issued only with proof beyond the session: `password` or `assertion`."""
    body = json_body(request)
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
        return refusal_response(refused)


@login_required
@require_POST
def register(request: HttpRequest) -> JsonResponse:
    body = json_body(request)
    try:
        passkey = services.passkey_register(user=request.user, name=body.get("name"), credential=body.get("credential"))
    except DomainError as refused:
        return refusal_response(refused)
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


def account_section(request: HttpRequest) -> dict:
    """The account page's Passkeys section (templates/passkeys/_account.html): the person's passkeys."""
    return {"template": "passkeys/_account.html", "passkeys": list(selectors.passkeys_of(request.user))}
