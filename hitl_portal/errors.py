"""One error shape for the whole API: {"error": {"code", "message", "fields"}}."""

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import RequestDataTooBig
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404, JsonResponse
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler


class ErrorDetailSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()
    fields = serializers.DictField(child=serializers.CharField())


class ErrorSerializer(serializers.Serializer):
    """API.md's error shape, {"error": {"code", "message", "fields"}}, for the OpenAPI schema."""

    error = ErrorDetailSerializer()


class PlanRequired(exceptions.APIException):
    status_code = status.HTTP_403_FORBIDDEN
    default_code = "plan_required"
    default_detail = "Human-in-the-Loop needs a Pro or Enterprise plan."


class SelfApproval(exceptions.APIException):
    """Four eyes: the person a run acts for may not approve its requests (rejecting is allowed)."""

    status_code = status.HTTP_403_FORBIDDEN
    default_code = "self_approval"
    default_detail = "The run acts for you, so another reviewer must approve it; you may reject it."


class Conflict(exceptions.APIException):
    status_code = status.HTTP_409_CONFLICT
    default_code = "conflict"
    default_detail = "The request conflicts with the object's current state."


class Unprocessable(exceptions.APIException):
    status_code = status.HTTP_422_UNPROCESSABLE_ENTITY
    default_code = "unprocessable"
    default_detail = "The request cannot be processed."


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


def api_exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(exc.message_dict if hasattr(exc, "error_dict") else exc.messages)
    elif isinstance(exc, Http404):
        exc = exceptions.NotFound("Not found: no such object in this workspace.")
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied(str(exc) or None)
    elif isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge()

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
