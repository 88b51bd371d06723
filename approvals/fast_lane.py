"""What the engines' two fast lanes share: api_wait.py (a long-poll) and api_register.py (a registration).

Under the ASGI server, the engines' two hot calls may skip Django's request, middleware and DRF
when they come in their common shape from an engine key this process has cached — and only then.
Each lane answers just as Django's view would (the same service, `approval_as_dict` and
JSONRenderer, the headers Django would send); anything it is not sure of it hands to Django
untouched, with whatever it read of the body put back (`replay`).
"""

import io
from collections.abc import Awaitable, Callable

from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse
from django.middleware.security import SecurityMiddleware
from django.utils.cache import patch_vary_headers
from rest_framework.views import APIView

from workspaces.authentication import engine_keys
from workspaces.models import ApiToken, hash_token

Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]

# Headers that decide whether a fast lane answers just as Django would: each may appear once at most.
WATCHED = {b"authorization", b"host", b"accept", b"content-length", b"content-type", b"transfer-encoding"} | {
    b"idempotency-key",
    b"x-forwarded-host",
    b"x-forwarded-proto",
}
# The renderings DRF would choose JSONRenderer's plain output for (`application/json; indent=4` would not).
PLAIN_ACCEPT = {None, b"*/*", b"application/json"}


def watched_headers(scope: dict) -> dict[bytes, bytes] | None:
    """The WATCHED headers by name; None if one of them appears twice (Django would join them)."""
    seen: dict[bytes, bytes] = {}
    for name, value in scope["headers"]:
        if name in WATCHED:
            if name in seen:
                return None
            seen[name] = value
    return seen


def host_key(scope: dict, seen: dict[bytes, bytes]) -> tuple:
    """What the response headers depend on: Host, scheme and the proxy headers."""
    return seen.get(b"host"), seen.get(b"x-forwarded-host"), scope.get("scheme"), seen.get(b"x-forwarded-proto")


def cached_engine_key(authorization: bytes | None) -> ApiToken | None:
    """The engine key behind `Bearer <key>` if this process has it cached (so it is live: authentication.py)."""
    raw = authorization[7:].decode("latin-1").strip() if authorization else ""
    if not raw or " " in raw:
        return None
    token = engine_keys.get(hash_token(raw))
    return token if token is not None and token.is_engine else None


class ResponseHeaders:
    """The headers Django sends with a success from one view (but Content-Length), per Host, scheme and proxy headers.

    DRF's own (content type, `Vary`, `Allow`) and what SecurityMiddleware adds, asked of the
    middleware itself on a request built from the scope, so the settings apply as they would.
    None for a Host Django would refuse (ALLOWED_HOSTS) or a request it would redirect
    (SECURE_SSL_REDIRECT): those go to Django, which answers them. The fast lanes' tests compare
    the result with Django's own response. Bounded: a few hosts in practice.
    """

    LIMIT = 32

    def __init__(self, view_class: type[APIView]) -> None:
        self.view_class = view_class
        self._by_key: dict[tuple, list[tuple[bytes, bytes]] | None] = {}

    def get(self, scope: dict, key: tuple) -> list[tuple[bytes, bytes]] | None:
        if key not in self._by_key:
            if len(self._by_key) >= self.LIMIT:
                return None
            self._by_key[key] = self._ask_django(scope)
        return self._by_key[key]

    def _ask_django(self, scope: dict) -> list[tuple[bytes, bytes]] | None:
        request = ASGIRequest({**scope, "query_string": b""}, io.BytesIO())
        try:
            request.get_host()
        except DisallowedHost:
            return None
        if settings.SECURE_SSL_REDIRECT and not request.is_secure():
            return None
        view = self.view_class()
        view.setup(request)
        response = HttpResponse(content_type="application/json")
        for name, value in view.default_response_headers.items():  # as DRF's finalize_response sets them
            if name == "Vary":
                patch_vary_headers(response, [value])
            else:
                response[name] = value
        return as_asgi_headers(secured(request, response))


def secured(request, response: HttpResponse) -> HttpResponse:
    """The response with what SecurityMiddleware adds to every response of the API's chain."""
    return SecurityMiddleware(lambda request: response).process_response(request, response)


def as_asgi_headers(response: HttpResponse) -> list[tuple[bytes, bytes]]:
    """The response's headers for ASGI, but Content-Length (send_json sets it)."""
    return [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in response.items()
        if name.lower() != "content-length"
    ]


async def send_json(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [*headers, (b"content-length", b"%d" % len(body))]}
    )
    await send({"type": "http.response.body", "body": body})


def replay(messages: list[dict], receive: Receive) -> Receive:
    """`receive` with the messages already taken from it put back in front, for Django's handler."""
    held = list(reversed(messages))

    async def replayed() -> dict:
        return held.pop() if held else await receive()

    return replayed
