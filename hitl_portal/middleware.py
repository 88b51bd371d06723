from django.conf import settings

from .errors import json_error


class ApiBodyLimitMiddleware:
    """Refuse oversized API bodies with 413 before anything reads them (API.md, Limits)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path.startswith("/api/"):
            try:
                length = int(request.META.get("CONTENT_LENGTH") or 0)
            except ValueError:
                return json_error("bad_request", "Content-Length must be a number of bytes.", 400)
            if length > settings.API_MAX_BODY_BYTES:
                return json_error(
                    "payload_too_large",
                    f"The request body is {length} bytes; the limit is {settings.API_MAX_BODY_BYTES} (256 KiB).",
                    413,
                )
        return self.get_response(request)
