"""One error shape for the whole API: {"error": {"code", "message", "fields"}}."""

from collections.abc import Callable

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler, set_rollback

from .exceptions import DomainError


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_code = "payload_too_large"
    default_detail = "The request body is over 256 KiB; send less."


CODES = {
    exceptions.ParseError: "bad_json",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.PermissionDenied: "forbidden",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.ValidationError: "invalid",
}


# The codes the domain errors answer with (each error's `code`: approvals/exceptions.py and the like);
# tests/test_layout.py holds every DomainError's code to this list.
DOMAIN_CODES = (
    "not_found",
    "invalid",
    "plan_required",
    "self_approval",
    "not_an_approver",
    "passkey_required",
    "passkey_refused",
    "reauthentication_required",
    "conflict",
    "forbidden",
    "idempotency_key_reused",
)


# Every `code` an error answer can carry: DRF's and the domain's refusals above, and those answered before
# a view is reached (the middleware, the edge) or by the Slack and Telegram endpoints. The schema's
# ErrorCodeEnum, so a generated client reads a code as one of these.
ERROR_CODES = sorted(
    {
        *CODES.values(),
        *DOMAIN_CODES,
        PayloadTooLarge.default_code,
        "bad_request",
        "error",
        "server_error",
        "length_required",
        "request_timeout",
        "too_many_waits",
        "bad_payload",
        "bad_update",
        "signature_invalid",
        "signature_stale",
        "signature_replayed",
        "slack_not_configured",
        "telegram_not_configured",
        "secret_missing",
        "secret_invalid",
    }
)


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=ERROR_CODES)
    message = serializers.CharField()
    fields = serializers.DictField(child=serializers.CharField())
    url = serializers.CharField(
        required=False, help_text="With `passkey_required`: the request's page, where approving with a passkey is done."
    )


class ErrorSerializer(serializers.Serializer):
    """docs/api.md's error shape, {"error": {"code", "message", "fields"}}, for the OpenAPI schema."""

    error = ErrorDetailSerializer()


def domain_error_response(exc: DomainError) -> Response:
    status_code, code = exc.status, exc.code
    set_rollback()  # as DRF does for its own exceptions under ATOMIC_REQUESTS
    if exc.field:
        # A refusal may name several inputs (`fields`, e.g. each failing path of edited arguments); the first leads.
        fields = getattr(exc, "fields", None) or {exc.field: exc.message}
        return Response(error_body(code, f"{exc.field}: {exc.message}", fields), status=status_code)
    body = error_body(code, exc.message)
    body["error"].update(getattr(exc, "extra", {}))  # e.g. passkey_required's `url`: the page to go to
    return Response(body, status=status_code)


class DomainErrorPages:
    """The same mapping for server-rendered pages: a missing object is the 404 page, a refusal the 403 one.

    Views catch the refusals they explain on the page (a wrong decision, the plan); the rest land here.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> None:
        if isinstance(exc, DomainError):
            if exc.status == status.HTTP_404_NOT_FOUND:
                raise Http404(exc.message) from exc
            if exc.status == status.HTTP_403_FORBIDDEN:
                raise DjangoPermissionDenied(exc.message) from exc


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


def _flatten(detail, prefix: str = "") -> dict[str, str]:
    """DRF's nested error detail → {"field.sub": "message"}."""
    if isinstance(detail, dict):
        flat = {}
        for key, value in detail.items():
            name = key if not prefix else f"{prefix}.{key}"
            if key == "non_field_errors":
                name = prefix or "non_field_errors"
            flat.update(_flatten(value, name))
        return flat
    if isinstance(detail, list):
        if all(not isinstance(item, (dict, list)) for item in detail):
            return {prefix or "non_field_errors": " ".join(str(item) for item in detail)}
        flat = {}
        for index, item in enumerate(detail):
            flat.update(_flatten(item, f"{prefix}.{index}" if prefix else str(index)))
        return flat
    return {prefix or "non_field_errors": str(detail)}


# What api_exception_handler answers as a refusal (4xx) rather than letting it through as a 500.
REFUSALS = (
    DomainError,
    exceptions.APIException,
    DjangoValidationError,
    Http404,
    DjangoPermissionDenied,
    RequestDataTooBig,
)


def api_exception_handler(exc: Exception, context: dict) -> Response | None:
    if isinstance(exc, DomainError):
        return domain_error_response(exc)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found: no such object in this workspace.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()
    elif type(exc) is exceptions.NotAcceptable:  # DRF's words name no fix
        exc = exceptions.NotAcceptable("The API answers in JSON only: send Accept: application/json or */*, or none.")

    response = exception_handler(exc, context)
    if response is None:
        return None
    code = next((c for cls, c in CODES.items() if type(exc) is cls), None) or getattr(exc, "default_code", "error")
    if isinstance(exc, exceptions.ValidationError):
        fields = _flatten(exc.detail)
        first = next(iter(fields.items()), ("", "Invalid input."))
        message = first[1] if first[0] in ("", "non_field_errors") else f"{first[0]}: {first[1]}"
        extra_code = getattr(exc, "error_code", None)
        return Response(
            error_body(extra_code or code, message, fields), status=response.status_code, headers=_headers(response)
        )
    detail = exc.detail if isinstance(exc, exceptions.APIException) else str(exc)
    if isinstance(detail, (dict, list)):
        fields = _flatten(detail)
        message = next(iter(fields.values()), "Error.")
    else:
        fields, message = {}, str(detail)
    return Response(error_body(code, message, fields), status=response.status_code, headers=_headers(response))


def _headers(response) -> dict:
    return {k: v for k, v in response.items() if k in ("WWW-Authenticate", "Allow", "Retry-After")}


def json_error(code: str, message: str, status_code: int) -> JsonResponse:
    return JsonResponse(error_body(code, message), status=status_code)
