"""The calls the edge owns (see __init__.py): a poll, a long-poll and a registration, each answered here.

Each call's checks and reads are the core's own functions, run on a worker thread (threads.py
hands its connection back); only the wait happens in the event loop (hub.py), costing a future
and a socket, never a thread.
"""

import asyncio
import contextvars
import re
from dataclasses import dataclass

from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.exception import response_for_exception
from django.http import HttpResponse
from django.utils import timezone
from django.utils.cache import patch_vary_headers
from rest_framework import exceptions
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from approvals.engine.api import approval_poll, registration_answer, wait_of
from approvals.engine.waiting import TooManyWaits, is_waiting, slots
from approvals.models import ApprovalRequest
from approvals.presenters.api import approval_read
from common.errors import REFUSALS, api_exception_handler
from common.middleware import NulGuardMiddleware
from common.parsers import JSONParser
from workspaces.access import Actor, actor_for_token
from workspaces.authentication import BearerTokenAuthentication, token_for_authorization
from workspaces.models import ApiToken

from . import hub, threads
from .http import Receive, Send, django_request, host_refusal, secured, send_response

APPROVAL_PATH = re.compile(r"/api/v1/approvals/([^/]+)")
REGISTRATION_PATH = "/api/v1/approvals"

_renderer = JSONRenderer()
_negotiation = DefaultContentNegotiation()
_nul_guard = NulGuardMiddleware(lambda request: None)


def owns(scope: dict) -> bool:
    """The one routing rule: an engine's (any Bearer token's) poll or registration is the edge's."""
    if not _has_bearer(scope):
        return False
    path, method = scope["path"], scope["method"]
    if method == "POST":
        return path == REGISTRATION_PATH
    return method in ("GET", "HEAD") and APPROVAL_PATH.fullmatch(path) is not None


def _has_bearer(scope: dict) -> bool:
    for name, value in scope["headers"]:
        if name == b"authorization":
            return value[:7].lower() == b"bearer "
    return False


@dataclass
class _Answer:
    """What a call answers: a body's data and status, or a response built already (a refusal, Django's
    500); a poll's read too."""

    response: Response | HttpResponse | None = None
    data: dict | None = None
    status: int = 200
    media_type: str = _renderer.media_type  # as Accept asked (a refusal: plain JSON)
    approval: ApprovalRequest | None = None
    wait: float = 0.0
    token_id: int | None = None  # whose slot a wait takes: the token's (an engine key or a person's)
    user_id: int | None = None  # and whose deactivation ends it


def _authenticated(request: ASGIRequest) -> tuple[ApiToken | None, Actor | None]:
    token = token_for_authorization(request.META.get("HTTP_AUTHORIZATION"))
    return token, (actor_for_token(token) if token is not None else None)


def _refused(exc: Exception) -> Response:
    """The refusal as the API's exception handler answers it (as DRF's views would)."""
    if isinstance(exc, exceptions.AuthenticationFailed | exceptions.NotAuthenticated):
        exc.auth_header = BearerTokenAuthentication.keyword  # DRF's view says so in WWW-Authenticate
    return api_exception_handler(exc, {})


def _on_thread(call):
    """Run `call(request, …)` on a worker thread; a refusal becomes its answer, a failure Django's 500.

    Straight onto the loop's executor (threads.py), in a copy of this task's context: asgiref's
    sync_to_async does the same with more bookkeeping (nested sync/async calls, context written
    back), which nothing the edge runs needs and every call paid for (docs/performance.md).
    """

    def run(request: ASGIRequest, *args) -> _Answer:
        try:
            refusal = _nul_guard.refusal(request)
            if refusal is not None:
                return _Answer(refusal)
            media_type = _media_type(request)  # before the call, as DRF's views refuse a 406 before their handler
            answer = call(request, *args)
            answer.media_type = media_type
            return answer
        except REFUSALS as exc:
            return _Answer(_refused(exc))
        except Exception as exc:  # logged by django.request, answered with the API's 500, as Django would
            return _Answer(response_for_exception(request, exc))

    async def on_thread(request: ASGIRequest, *args, first: bool = False) -> _Answer:
        """`first`: ahead of every call not asked first (threads.py), as a woken waiter's read is."""
        context = contextvars.copy_context()
        if first:
            return await threads.run_first(context.run, run, request, *args)
        return await asyncio.get_running_loop().run_in_executor(None, context.run, run, request, *args)

    return on_thread


@_on_thread
def _poll(request: ASGIRequest, public_id: str) -> _Answer:
    token, actor = _authenticated(request)
    wait = wait_of(request.GET)
    approval = approval_poll(actor=actor, public_id=public_id)
    return _Answer(
        data=approval_read(approval, actor=actor),
        approval=approval,
        wait=wait,
        token_id=token.pk,
        user_id=token.user_id,
    )


@_on_thread
def _register(request: ASGIRequest, body: bytes) -> _Answer:
    # After the body is read: a key revoked while the body was uploading is refused (401).
    _, actor = _authenticated(request)
    drf_request = Request(request, parsers=[JSONParser()])
    status, answer = registration_answer(
        actor=actor, idempotency_header=request.headers.get("Idempotency-Key"), body=drf_request.data
    )
    return _Answer(data=answer, status=status)


# What engines send: nothing to negotiate (and no query string, so no `?format=` to obey).
PLAIN_ACCEPTS = frozenset(["", "*/*", _renderer.media_type])


def _rendered(request: ASGIRequest, answer: _Answer) -> HttpResponse:
    """The answer as DRF's views render it: JSON as Accept allows (else 406), and Vary: Accept."""
    response, media_type = answer.response, answer.media_type
    if response is None:  # what DRF's Response renders, without the template machinery it carries for HTML
        body = _renderer.render(answer.data, media_type, {})
        response = HttpResponse(body, status=answer.status, content_type=media_type)
        patch_vary_headers(response, ["Accept"])
    elif isinstance(response, Response):  # a refusal
        response.accepted_renderer, response.accepted_media_type = _renderer, media_type
        response.renderer_context = {}
        response.render()
        patch_vary_headers(response, ["Accept"])
    return secured(request, response)


def _media_type(request: ASGIRequest) -> str:
    """What Accept asks for; NotAcceptable (406) for a type the API does not speak, Http404 for a `?format=`."""
    if request.META.get("HTTP_ACCEPT", "") in PLAIN_ACCEPTS and not request.META.get("QUERY_STRING"):
        return _renderer.media_type
    return _negotiation.select_renderer(Request(request), [_renderer])[1]


async def answer(scope: dict, body: bytes, receive: Receive, send: Send) -> None:
    """Answer one call the edge owns (`owns(scope)`), the body read already (app.py)."""
    request = django_request(scope, body)
    early = host_refusal(request)
    if early is not None:
        await send_response(send, early)
        return
    head = scope["method"] == "HEAD"
    if scope["method"] == "POST":
        result = await _register(request, body)
    else:
        public_id = APPROVAL_PATH.fullmatch(scope["path"])[1]
        # A wait is asked for in the query (a plain poll has none): its waiter goes into the hub before
        # the first read, so a decision committed after that read wakes it with no read again (hub.py).
        hub_ = hub.hub()
        waiter = hub_.register(public_id) if scope["query_string"] else None
        try:
            result = await _poll(request, public_id)
            if waiter is not None and result.approval is not None and result.wait and is_waiting(result.approval):
                result = await _wait(request, public_id, result, receive, hub_, waiter)
                if result is None:
                    return  # the client has gone: nothing to answer
        finally:
            if waiter is not None:
                hub_.forget(waiter)
    await send_response(send, _rendered(request, result), head=head)


async def _wait(
    request: ASGIRequest, public_id: str, first: _Answer, receive: Receive, hub_: hub.WaitHub, waiter: hub.Waiter
) -> _Answer | None:
    """The one wait: hold a slot, wait on the hub until woken, the time is up or the client hangs up."""
    approval, token_id, user_id = first.approval, first.token_id, first.user_id
    until_expiry = (approval.expires_at - timezone.now()).total_seconds()
    seconds = min(first.wait, until_expiry)
    try:
        slots.take(token_id, user_id)
    except TooManyWaits as exc:
        return _Answer(_refused(exc))
    hung_up = asyncio.ensure_future(_hang_up(receive))
    hung_up.add_done_callback(waiter.let_go)
    try:
        changed = await hub_.hold(waiter, token_id=token_id, user_id=user_id, seconds=seconds)
    finally:
        hung_up.cancel()
        slots.give_back(token_id, user_id)
    if changed is None:
        return None
    if not changed and until_expiry > first.wait:
        # Nothing was decided, expired or revoked (the hub has listened since before the first read, or
        # re-read it): the answer is the pending request as first read.
        return first
    # Woken, or the request expired: read it again (auth again), ahead of the new waits' first reads.
    return await _poll(request, public_id, first=True)


async def _hang_up(receive: Receive) -> None:
    """Returns when the client hangs up (the body is read already: nothing else is left to come)."""
    while (await receive())["type"] != "http.disconnect":
        pass
