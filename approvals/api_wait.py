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
"""

from asgiref.sync import sync_to_async
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse
from django.urls import path

from hitl_portal.errors import json_error

from . import waiters
from .api_engine import ApprovalDetailView
from .waiting import DEFER, WAITED, TooManyWaits, WaitPlan, slots

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


# The long-poll handler's URLconf (hitl_portal/handlers.py): this one path, the same name as the sync one.
urlpatterns = [path("api/v1/approvals/<str:apr>", approval_detail, name="api-approval")]
handler404 = "hitl_portal.views.not_found"
handler500 = "hitl_portal.views.server_error"
