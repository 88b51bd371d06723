"""ASGI plumbing the edge shares with the Django side: the body guard, Django's request, sending a response."""

import asyncio
import io
import os
from collections.abc import Awaitable, Callable

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.http import HttpResponse
from django.middleware.security import SecurityMiddleware

from common.errors import json_error
from common.middleware import MACHINE_PATHS, ApiEnvelopeMiddleware

Receive = Callable[[], Awaitable[dict]]
Send = Callable[[dict], Awaitable[None]]

# The whole body must arrive within this many seconds of the headers (the server's header timeout is
# edge/server.py's): a client trickling its body would otherwise hold a connection and a task for ever.
BODY_TIMEOUT_SECONDS = float(os.environ.get("HITL_BODY_TIMEOUT", "30"))


class BodyRefused(Exception):
    """The body was refused before it was read whole; `response` says why."""

    def __init__(self, response: HttpResponse) -> None:
        self.response = response


class ClientGone(Exception):
    """The client hung up before its body was read: there is no one to answer."""


def _refusal(path: str, code: str, message: str, status: int) -> HttpResponse:
    if path.startswith(MACHINE_PATHS):
        return json_error(code, message, status)
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def _header(scope: dict, name: bytes) -> bytes | None:
    values = [value for key, value in scope["headers"] if key == name]
    return values[0] if len(values) == 1 else (b"," if values else None)  # "," for twice: never a number


async def read_body(scope: dict, receive: Receive, *, timeout: float = BODY_TIMEOUT_SECONDS) -> bytes:
    """The request's whole body, at most API_MAX_BODY_BYTES; raises BodyRefused or ClientGone.

    An oversized Content-Length is refused before a byte is read; a chunked body stops being read
    one byte past the limit. Nothing is spooled to disk.
    """
    limit = settings.API_MAX_BODY_BYTES
    path = scope["path"]
    declared = _header(scope, b"content-length")
    if declared is not None:
        if not declared.isdigit():
            raise BodyRefused(_refusal(path, "bad_request", "Content-Length must be a number of bytes.", 400))
        if int(declared) > limit:
            raise BodyRefused(_too_large(path, declared.decode()))
    chunks, size = [], 0
    try:
        # One deadline for the whole body (asyncio.timeout: no task per message, as wait_for makes).
        async with asyncio.timeout(timeout):
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientGone
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    raise BodyRefused(_too_large(path, f"more than {limit}"))
                chunks.append(chunk)
                if not message.get("more_body"):
                    return b"".join(chunks)
    except TimeoutError:
        raise BodyRefused(
            _refusal(path, "request_timeout", f"The body did not arrive within {timeout:g} s; send it whole.", 408)
        ) from None


def _too_large(path: str, size: str) -> HttpResponse:
    return _refusal(
        path,
        "payload_too_large",
        f"The request body is {size} bytes; the limit is {settings.API_MAX_BODY_BYTES} (256 KiB).",
        413,
    )


def with_body(scope: dict, body: bytes, receive: Receive) -> tuple[dict, Receive]:
    """The scope and `receive` for a request whose body has been read already (by read_body).

    The scope says the body's length (a chunked body reads as one sent with it), and `receive`
    hands the body over in one message, then whatever the client sends next (its hang-up).
    """
    headers = [(k, v) for k, v in scope["headers"] if k not in (b"content-length", b"transfer-encoding")]
    if body or _header(scope, b"content-length") is not None or _header(scope, b"transfer-encoding") is not None:
        headers.append((b"content-length", b"%d" % len(body)))
    given = False

    async def replayed() -> dict:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return {**scope, "headers": headers}, replayed


def django_request(scope: dict, body: bytes = b"") -> ASGIRequest:
    return ASGIRequest(scope, io.BytesIO(body))


# The same middlewares the Django side runs first: the Host check, the SSL redirect and the security headers.
_envelope = ApiEnvelopeMiddleware(lambda request: None)
_security = SecurityMiddleware(lambda request: None)


def host_refusal(request: ASGIRequest) -> HttpResponse | None:
    """What Django would answer before any view: a Host outside ALLOWED_HOSTS (400), or the SSL redirect."""
    return _envelope.refusal(request) or _security.process_request(request)


def secured(request: ASGIRequest, response: HttpResponse) -> HttpResponse:
    return _security.process_response(request, response)


async def send_response(send: Send, response: HttpResponse, *, head: bool = False) -> None:
    body = response.content
    headers = [
        (name.lower().encode("latin-1"), value.encode("latin-1"))
        for name, value in response.items()
        if name.lower() != "content-length"
    ]
    headers.append((b"content-length", b"%d" % len(body)))
    await send({"type": "http.response.start", "status": response.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": b"" if head else body})
