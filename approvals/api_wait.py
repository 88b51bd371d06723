"""`GET /api/v1/approvals/{apr}?wait=S` under the ASGI server: a wait costs a socket and a future, never a thread.

The sync ApprovalDetailView does all the checking (auth, permissions, `wait`, the workspace-scoped
read) on an executor thread and, instead of waiting, leaves a WaitPlan on the request; the wait
itself happens here, in the event loop (waiters.py). Woken (decided, expired, key revoked), the same
view runs once more to read and render the answer — the same code as a plain poll, authenticating
again, so a revoked key gets 401. A wait that times out unwoken answers with the first read.

If the client hangs up, Django cancels this coroutine (ASGI `http.disconnect`): the `finally`
blocks drop the waiter and its slot at once.

hitl_portal/handlers.py sends only `GET /api/v1/approvals/<apr>?wait=…` with a Bearer token here;
a browser session's long-poll goes through the full middleware (and a thread) like any page.

**The fast lane** (`fast_long_poll`, tried first by the handler): most long-polls are an engine
asking again, every 30 s, about a request it has asked about before. For that one shape — a
cached engine key (workspaces/authentication.py: cached only while the LISTEN connection is up),
`?wait=S` and nothing else, no body, a Host Django accepts, an Accept JSONRenderer answers as is —
the wait skips Django's request, middleware, DRF and the executor thread altogether: the hub's
checker reads the request in its batched query (waiters.py), and a wait that runs out answers
with that row, rendered by the same `approval_as_dict` and JSONRenderer, with the headers Django
would send (ResponseHeaders: DRF's, and SecurityMiddleware's for that Host and scheme).
Anything else — an unknown id, another workspace's, a decided or nearly expired request, a quorum,
a revoked key, the cap, a wake-up — goes to Django's view as before, which answers it exactly.
A wait then costs the event loop a few dictionary operations and a share of one query.
"""

import asyncio
import re
from datetime import timedelta

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse
from django.urls import path
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from hitl_portal.errors import json_error

from . import waiters
from .api_engine import ApprovalDetailView
from .fast_lane import (
    PLAIN_ACCEPT,
    Receive,
    ResponseHeaders,
    Send,
    cached_engine_key,
    host_key,
    replay,
    send_json,
    watched_headers,
)
from .models import Status
from .serializers import approval_as_dict
from .waiting import DEFER, WAITED, TooManyWaits, WaitPlan, slots

WAITED_SCOPE_KEY = "hitl.waited"  # set by the fast lane when it hands a woken wait to Django's view

_detail_view = ApprovalDetailView.as_view()


def _run_detail_view(request: HttpRequest, apr: str, mode: str) -> HttpResponse:
    """The DRF view on an executor thread, rendered there; its database connection goes back at once."""
    request.hitl_wait_mode = mode
    try:
        response = _detail_view(request, apr=apr)
        if hasattr(response, "render"):
            response.render()
        return response
    finally:
        # Between the two halves of a long-poll nothing may hold a connection: with the ASGI pool
        # (CONN_MAX_AGE=0) this hands it back; a persistent one stays with its executor thread.
        close_old_connections()


run_detail_view = sync_to_async(_run_detail_view, thread_sensitive=False)


async def approval_detail(request: HttpRequest, apr: str) -> HttpResponse:
    if request.scope.get(WAITED_SCOPE_KEY):  # the fast lane has waited already (below)
        return await run_detail_view(request, apr, WAITED)
    response = await run_detail_view(request, apr, DEFER)
    plan: WaitPlan | None = request.__dict__.pop("hitl_wait", None)
    if plan is None:  # an error, no wait, or nothing to wait for
        return response
    try:
        slots.take(plan.token_id)
    except TooManyWaits as exc:
        refusal = json_error("too_many_waits", str(exc.detail), exc.status_code)
        refusal["Retry-After"] = str(exc.wait)
        return refusal
    try:
        woken = await waiters.hub().wait(
            public_id=plan.public_id, token_id=plan.token_id, user_id=plan.user_id, seconds=plan.seconds
        )
    finally:
        slots.give_back(plan.token_id)
    if not woken and not plan.ends_at_expiry:
        # Nothing was decided, expired or revoked during the wait (the hub re-read it once registered
        # and has listened since): the answer is the pending request as first read. Most long-polls end
        # so, and this spares them a second pass through auth and the read.
        return response
    return await run_detail_view(request, apr, WAITED)


# ------------------------------------------------------------------------------------ the fast lane

FAST_PATH = re.compile(r"/api/v1/approvals/([a-z]{3}_[a-z0-9]{1,21})")  # hitl_portal/ids.py: no NUL, no oddity
FAST_QUERY = re.compile(rb"wait=([0-9]{1,2}(?:\.[0-9]{1,6})?)")
FIRST_READ_SECONDS = 5.0  # the checker is stuck (database down): let Django's view answer however it can
EXPIRY_MARGIN = timedelta(seconds=1)  # a wait that would end as the request expires is Django's (it expires it)
_renderer = JSONRenderer()
response_headers = ResponseHeaders(ApprovalDetailView)


def headers_key(scope: dict) -> tuple | None:
    """(What the response headers depend on, the Authorization header); None: not the fast lane's shape."""
    if scope.get("root_path") or FAST_PATH.fullmatch(scope["path"]) is None:
        return None
    seen = watched_headers(scope)
    if seen is None or seen.get(b"content-length", b"0") != b"0" or b"transfer-encoding" in seen:
        return None
    if seen.get(b"accept") not in PLAIN_ACCEPT:
        return None
    return host_key(scope, seen), seen.get(b"authorization")


async def fast_long_poll(scope: dict, receive: Receive, send: Send) -> Receive | None:
    """Answer the long-poll here if it is the common shape and stays so; None once answered.

    Otherwise returns the `receive` Django's handler should read the request from (nothing has been
    sent, and any message taken from `receive` is replayed).
    """
    shape = headers_key(scope)
    match = FAST_QUERY.fullmatch(scope["query_string"])
    hub = waiters.hub()
    if shape is None or match is None or not isinstance(hub, waiters.WaitHub):
        return receive
    host, authorization = shape
    seconds = float(match[1])
    headers = response_headers.get(scope, host)
    if not 0 < seconds <= settings.APPROVAL_MAX_WAIT_SECONDS or headers is None:
        return receive
    token = cached_engine_key(authorization)
    if token is None:
        return receive
    try:
        slots.take(token.pk)
    except TooManyWaits:
        return receive  # Django's view refuses it with the 429 and its Retry-After
    waiter = hub.join(public_id=scope["path"].rsplit("/", 1)[1], token_id=token.pk, workspace_id=token.workspace_id)
    try:
        try:
            row = await asyncio.wait_for(waiter.first_read, FIRST_READ_SECONDS)
        except TimeoutError:
            row = None
        if row is None or not _worth_waiting(row, seconds):
            return receive
        message = await receive()  # the (empty) body: there already
        if message["type"] == "http.disconnect":
            return None
        if message.get("more_body"):
            return replay([message], receive)
        hung_up = asyncio.ensure_future(receive())
        try:
            done, _ = await asyncio.wait((waiter.future, hung_up), timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not hung_up.done():
                hung_up.cancel()
        if hung_up in done:  # for a request without a body, the one message left to come is the disconnect
            return None  # the client has gone: nothing to answer
        if waiter.future in done:  # decided, expired or revoked: Django's view reads and answers it, no new wait
            scope[WAITED_SCOPE_KEY] = True
            return replay([message], receive)
        body = _renderer.render(approval_as_dict(waiters.approval_from_row(row)))
        await send_json(send, 200, headers, body)
        return None
    finally:
        hub.leave(waiter)
        slots.give_back(token.pk)


def _worth_waiting(row: tuple, seconds: float) -> bool:
    """Pending past the end of the wait, and one approval decides it (a quorum's votes are another read)."""
    expires_at = waiters.row_value(row, "expires_at")
    return (
        waiters.row_value(row, "status") == Status.PENDING
        and waiters.row_value(row, "approvals_required") == 1
        and expires_at - timezone.now() > timedelta(seconds=seconds) + EXPIRY_MARGIN
    )


# The long-poll handler's URLconf (hitl_portal/handlers.py): this one path, the same name as the sync one.
urlpatterns = [path("api/v1/approvals/<str:apr>", approval_detail, name="api-approval")]
handler404 = "hitl_portal.views.not_found"
handler500 = "hitl_portal.views.server_error"
