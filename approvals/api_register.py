"""`POST /api/v1/approvals` under the ASGI server, in its common shape: the registration's fast lane.

Registration is the engines' hot path, and for a small JSON body most of its cost was Django's and
DRF's request handling around one INSERT: building the request, the middleware, three hand-overs
to a thread (the request signals and the view), routing, content negotiation. For the one shape an
engine sends — a key this process has cached (workspaces/authentication.py: only while its LISTEN
connection is up, so a revocation still takes effect at once), `Content-Type: application/json`
with a Content-Length, no query string, an Accept that JSONRenderer answers as is, a Host Django
accepts, and a body the serializers' fast path (hitl_portal/fast_path.py) accepts as it is — the
handler (hitl_portal/handlers.py) lets this module answer: the body is parsed by the API's own
JSON parser, and the registration is `registration_answer`, the very function the DRF view calls,
run once on an executor thread.

Everything else goes to Django's view untouched, the body put back: another shape, a body the fast
path is not sure of (the serializers name what is wrong), and any refusal of the service (an
unknown config or rule, a level refusal, a reused Idempotency-Key) — those are raised before
anything is written, so Django's view runs the same registration again and answers the refusal
itself, word for word. An unexpected failure is answered as Django answers it (logged, the API's
500) and not run again: it may have come after the INSERT.
"""

import io

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.core.handlers.exception import response_for_exception
from django.db import close_old_connections
from rest_framework.exceptions import APIException, ParseError
from rest_framework.renderers import JSONRenderer

from hitl_portal.errors import REFUSALS
from hitl_portal.parsers import JSONParser
from workspaces.models import ApiToken

from .api import ApprovalCollectionView
from .api_engine import idempotency_key_of, plainly_valid_registration, registration_answer
from .fast_lane import (
    PLAIN_ACCEPT,
    Receive,
    ResponseHeaders,
    Send,
    as_asgi_headers,
    cached_engine_key,
    host_key,
    replay,
    secured,
    send_json,
    watched_headers,
)

PATH = "/api/v1/approvals"
JSON = b"application/json"
# A registration is a few hundred bytes; a larger body (big `arguments`) goes to Django, which reads it
# to the API's limit (256 KiB) and refuses more with 413.
MAX_BODY_BYTES = 64 * 1024
_parser = JSONParser()
_renderer = JSONRenderer()
response_headers = ResponseHeaders(ApprovalCollectionView)


def is_registration(scope: dict) -> bool:
    return scope["method"] == "POST" and scope["path"] == PATH


async def fast_register(scope: dict, receive: Receive, send: Send) -> Receive | None:
    """Answer the registration here if it is the common shape; None once answered (or the client has gone).

    Otherwise returns the `receive` Django's handler should read the request from (nothing has been
    sent, and the body, if read, is replayed).
    """
    seen = watched_headers(scope)
    if seen is None or scope["query_string"] or scope.get("root_path"):
        return receive
    if seen.get(b"content-type") != JSON or seen.get(b"accept") not in PLAIN_ACCEPT or b"transfer-encoding" in seen:
        return receive
    length = seen.get(b"content-length", b"")
    if not length.isdigit() or int(length) > MAX_BODY_BYTES:
        return receive
    headers = response_headers.get(scope, host_key(scope, seen))
    engine_key = cached_engine_key(seen.get(b"authorization"))
    idempotency_key = _idempotency_key(seen.get(b"idempotency-key"))
    if headers is None or engine_key is None or idempotency_key is None:
        return receive

    messages, chunks = [], []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None  # gone before sending its whole body: there is nothing to register (Django: the same)
        messages.append(message)
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    body = _plain_body(b"".join(chunks))
    data = plainly_valid_registration(body)
    if data is None:
        return replay(messages, receive)
    answer = await _register(scope, headers, engine_key, idempotency_key, body, data)
    if answer is None:
        return replay(messages, receive)
    await send_json(send, *answer)
    return None


def _idempotency_key(header: bytes | None) -> str | None:
    """The key as Django's view would take it, "" without one; None if the view would refuse it."""
    try:
        return idempotency_key_of(None if header is None else header.decode("latin-1"))
    except APIException:
        return None


def _plain_body(raw: bytes) -> object:
    """The body as the API's parser reads it (DRF's `request.data`); None where it would refuse it."""
    try:
        return _parser.parse(io.BytesIO(raw), JSON.decode(), {})
    except ParseError:
        return None


def _register_on_thread(
    scope: dict, headers: list, engine_key: ApiToken, idempotency_key: str, body: dict, data: dict
) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
    """(status, headers, body) to send; None for a refusal, which Django's view answers."""
    try:
        status, answer = registration_answer(
            engine_key=engine_key, idempotency_key=idempotency_key, body=body, data=data
        )
        return status, headers, _renderer.render(answer)
    except REFUSALS:  # raised before anything is written: Django's view registers again and refuses it
        return None
    except Exception as exc:  # as Django's handler answers and logs it (django.request): the API's 500
        request = ASGIRequest(scope, io.BytesIO())
        response = secured(request, response_for_exception(request, exc))
        return response.status_code, as_asgi_headers(response), response.content
    finally:
        close_old_connections()  # with the ASGI pool this hands the connection back, as request_finished would


_register = sync_to_async(_register_on_thread, thread_sensitive=False)
