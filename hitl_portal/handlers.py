"""Three doors into the portal, chosen per request before any middleware runs (asgi.py, wsgi.py).

- A Bearer-token API call (engines, scripts) uses none of sessions, messages, CSRF, auth
  middleware, clickjacking headers, htmx or static files: it goes through API_MIDDLEWARE alone.
- A long-poll (`GET /api/v1/approvals/<apr>?wait=…` with a Bearer token, ASGI only) is first
  offered to the fast lane (approvals/api_wait.py: a cached engine key waiting again, no Django
  at all), else goes through LONG_POLL_MIDDLEWARE (all async: a sync middleware would pin a
  thread for the whole wait) to the async view in approvals/api_wait.py, without Django's
  per-request thread (ThreadSensitiveContext): 10,000 waits must not be 10,000 threads.
- A registration (`POST /api/v1/approvals`, ASGI only) is first offered to its fast lane
  (approvals/api_register.py: a cached engine key, a plainly valid JSON body, no Django at all),
  else takes the API door like any Bearer call.
- Everything else (pages, the browser's session calls to the API) gets the full MIDDLEWARE.
"""

import re

from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.wsgi import WSGIHandler

LONG_POLL_PATH = re.compile(r"/api/v1/approvals/[^/]+")
LONG_POLL_URLCONF = "approvals.api_wait"


class _OwnMiddleware:
    """A handler built from its own middleware list instead of settings.MIDDLEWARE."""

    middleware_setting = "API_MIDDLEWARE"

    def load_middleware(self, is_async: bool = False) -> None:
        # BaseHandler reads settings.MIDDLEWARE; show it ours while it builds the chain (once, at startup).
        full = settings.MIDDLEWARE
        settings.MIDDLEWARE = getattr(settings, self.middleware_setting)
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = full


class ApiASGIHandler(_OwnMiddleware, ASGIHandler):
    pass


class ApiWSGIHandler(_OwnMiddleware, WSGIHandler):
    pass


class LongPollASGIHandler(_OwnMiddleware, ASGIHandler):
    middleware_setting = "LONG_POLL_MIDDLEWARE"

    async def __call__(self, scope, receive, send) -> None:
        from approvals.api_wait import fast_long_poll

        # Most long-polls are an engine asking again about the same request: answered without Django.
        receive = await fast_long_poll(scope, receive, send)
        if receive is None:
            return
        # Django's ASGIHandler opens a ThreadSensitiveContext here, which gives every request a thread of
        # its own for as long as it lasts. Our view hands its sync work to the shared executor instead.
        await self.handle(scope, receive, send)

    async def get_response_async(self, request):
        request.urlconf = LONG_POLL_URLCONF
        return await super().get_response_async(request)


def bearer(authorization: str | bytes | None) -> bool:
    if not authorization:
        return False
    prefix = authorization[:7]
    return (prefix.decode("latin-1") if isinstance(prefix, bytes) else prefix).lower() == "bearer "


def is_long_poll(method: str, path: str, query_string: bytes) -> bool:
    return method == "GET" and b"wait=" in query_string and LONG_POLL_PATH.fullmatch(path) is not None


class PortalASGI:
    """The ASGI application: picks the door, and answers the lifespan protocol (closing the LISTEN hub)."""

    def __init__(self) -> None:
        from approvals import api_register  # here, not at the top: it imports the views, after setup

        self.registration = api_register

        self.full = ASGIHandler()
        self.api = ApiASGIHandler()
        self.long_poll = LongPollASGIHandler()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] == "http" and scope["path"].startswith("/api/"):
            authorization = next((value for name, value in scope["headers"] if name == b"authorization"), None)
            if bearer(authorization):
                if is_long_poll(scope["method"], scope["path"], scope["query_string"]):
                    await self.long_poll(scope, receive, send)
                    return
                if self.registration.is_registration(scope):
                    # An engine's registration in its common shape is answered without Django (api_register.py).
                    receive = await self.registration.fast_register(scope, receive, send)
                    if receive is None:
                        return
                await self.api(scope, receive, send)
                return
        await self.full(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        from approvals.waiters import close_hubs, hub, serve_sync_waits

        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                hub()  # LISTEN from the start: the engine key cache (workspaces/authentication.py) needs it
                serve_sync_waits()  # a browser session's wait (a sync view) waits on it too
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await close_hubs()
                await send({"type": "lifespan.shutdown.complete"})
                return


class PortalWSGI:
    """The WSGI application: Bearer API calls skip the browser's middleware here too."""

    def __init__(self) -> None:
        self.full = WSGIHandler()
        self.api = ApiWSGIHandler()

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO", "").startswith("/api/") and bearer(environ.get("HTTP_AUTHORIZATION")):
            return self.api(environ, start_response)
        return self.full(environ, start_response)
