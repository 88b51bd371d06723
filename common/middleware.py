import logging
from collections.abc import Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.core.exceptions import DisallowedHost
from django.core.handlers.asgi import ASGIRequest
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest, StreamingHttpResponse
from django.http.multipartparser import MultiPartParserError

from .errors import json_error

security_log = logging.getLogger("django.security.DisallowedHost")

# Endpoints machines call, answering in the API's JSON error shape: the REST API, and the
# integrations (Slack's interactivity), whose bodies are held to the same limit.
MACHINE_PATHS = ("/api/", "/integrations/")


# What an /api/ answer that left Django as a page (its DEBUG 404 page, a view of Django's own) is
# called in the envelope: every answer under /api/ is JSON, whatever DEBUG says.
ENVELOPE_CODES = {
    400: ("bad_request", "The request could not be read."),
    403: ("forbidden", "You may not do that."),
    404: ("not_found", "Not found: no such endpoint or object."),
    405: ("method_not_allowed", "That method is not allowed here."),
}


class PassThroughMiddleware:
    """A middleware with no blocking work: sync in a sync chain, async in the ASGI server's async one
    (a sync-only middleware there would cost every request a thread hop). A subclass says what it
    refuses before the view (`refusal`) and what it does to the answer after (`answered`)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if self.async_mode:
            return self._acall(request)
        refusal = self.refusal(request)
        if refusal is not None:
            return refusal
        return self.answered(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponse:
        refusal = self.refusal(request)
        if refusal is not None:
            return refusal
        return self.answered(request, await self.get_response(request))

    def refusal(self, request: HttpRequest) -> HttpResponse | None:
        return None

    def answered(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        return response


class ApiEnvelopeMiddleware(PassThroughMiddleware):
    """First in every chain: the API's answers are the JSON envelope even where Django answers alone.

    A Host outside ALLOWED_HOSTS is refused here, as JSON (one log line, no traceback: a scanner's
    Host is not our fault), before anything else asks for it. An error answer that is not JSON —
    Django's own 404 page under DEBUG, for a path no route matches — is put in the envelope.
    """

    def refusal(self, request: HttpRequest) -> HttpResponse | None:
        if not request.path.startswith(MACHINE_PATHS):
            return None
        try:
            request.get_host()
        except DisallowedHost as error:
            security_log.warning("%s", error)
            return json_error("bad_request", "The Host header names no site this portal serves.", 400)
        return None

    def answered(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if not request.path.startswith(MACHINE_PATHS) or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        code, message = ENVELOPE_CODES.get(response.status_code, ("error", "The request failed."))
        if response.status_code >= 500:
            code, message = "server_error", "Something went wrong on our side; it has been logged."
        enveloped = json_error(code, message, response.status_code)
        for header in ("Allow", "Retry-After", "WWW-Authenticate"):
            if header in response:
                enveloped[header] = response[header]
        return enveloped


def _too_large(size: str) -> object:
    return json_error(
        "payload_too_large",
        f"The request body is {size} bytes; the limit is {settings.API_MAX_BODY_BYTES} (256 KiB).",
        413,
    )


class ApiBodyLimitMiddleware:
    """Refuse oversized API bodies with 413 before anything reads them (docs/api.md, Limits).

    Django sizes a body by Content-Length alone, so a chunked body would be read as empty — a POST
    creating a rule would create the default one. Under ASGI the server has received it whole
    (bounded by the edge: edge/http.py), so it is read here (`request.body`) and handed on with its
    length; under WSGI, whose input may not end at the body's end, it is refused (411), never
    treated as empty.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path.startswith(MACHINE_PATHS):
            declared = request.META.get("CONTENT_LENGTH")
            if declared:
                try:
                    length = int(declared)
                except ValueError:
                    return json_error("bad_request", "Content-Length must be a number of bytes.", 400)
                if length > settings.API_MAX_BODY_BYTES:
                    return _too_large(str(length))
            elif request.META.get("HTTP_TRANSFER_ENCODING"):
                refusal = self._read_unsized_body(request)
                if refusal is not None:
                    return refusal
        return self.get_response(request)

    @staticmethod
    def _read_unsized_body(request):
        if not isinstance(request, ASGIRequest):
            return json_error(
                "length_required",
                "Send the body with a Content-Length header (this server cannot read it chunked).",
                411,
            )
        body = request.body
        if len(body) > settings.API_MAX_BODY_BYTES:
            return _too_large(f"more than {settings.API_MAX_BODY_BYTES}")
        # From here on the request looks as if it had been sent with its length.
        request.META["CONTENT_LENGTH"] = str(len(body))
        return None


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
NUL_MESSAGE = "The NUL character (\\u0000, %00) is not allowed in {where}; remove it."


class NulGuardMiddleware(PassThroughMiddleware):
    """No NUL byte from a path, a query or a form reaches the database (PostgreSQL refuses it in text).

    One place for every page and endpoint, so no view has to remember: an id with a NUL cannot
    exist (404), a filter or form value with one is bad input (400). JSON bodies are the
    serializers' to check, where the error can name the field.
    """

    def refusal(self, request: HttpRequest) -> HttpResponse | None:
        if "\x00" in request.path_info:
            raise Http404("No such page or object.")
        if _has_nul(request.GET):
            return self._refuse(request, NUL_MESSAGE.format(where="the query string"))
        if request.method == "POST" and request.content_type in FORM_TYPES:
            try:
                form = request.POST
            except MultiPartParserError as error:
                # A client's malformed body (a multipart with no boundary): bad input, not a traceback.
                return self._refuse(request, message=f"The form body cannot be read: {error}.")
            if _has_nul(form):
                return self._refuse(request, NUL_MESSAGE.format(where="a form field"))
        return None

    @staticmethod
    def _refuse(request, message: str) -> HttpResponse:
        if request.path.startswith(MACHINE_PATHS):
            return json_error("bad_request", message, 400)
        return HttpResponseBadRequest(message, content_type="text/plain; charset=utf-8")


def _has_nul(data) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in data.lists())


class AsyncStreamingMiddleware(PassThroughMiddleware):
    """Under ASGI, a streaming answer with a sync iterator (WhiteNoise's files, the audit export) is read
    chunk by chunk off the event loop, instead of Django reading it whole into memory with a warning.

    Placed before WhiteNoise in MIDDLEWARE, so the files it answers with pass through here on their way out.
    Django runs the chain sync when a middleware below is sync-only, even under ASGI: so the request, not
    the chain's mode, says whether the answer will be sent by the ASGI handler. Under WSGI it is left as is.
    """

    def answered(self, request: HttpRequest, response: HttpResponse) -> HttpResponse:
        if isinstance(request, ASGIRequest) and isinstance(response, StreamingHttpResponse) and not response.is_async:
            # The response keeps its closers (the open file), which the handler calls once it is sent.
            response.streaming_content = _read_in_thread(response.streaming_content)
        return response


_DONE = object()


async def _read_in_thread(chunks):
    """A sync iterator's chunks, each read in the request's sync thread (where its database cursor lives)."""
    iterator = iter(chunks)
    read = sync_to_async(next, thread_sensitive=True)
    while (chunk := await read(iterator, _DONE)) is not _DONE:
        yield chunk
