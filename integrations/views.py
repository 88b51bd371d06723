"""POST /integrations/slack/interactions (buttons and modals) and /integrations/slack/events (thread replies):
Slack's calls, the signature checked first, the same way for both."""

import json
import logging
from collections.abc import Callable

from django.core.exceptions import RequestDataTooBig
from django.http import QueryDict
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers
from rest_framework.parsers import FormParser, JSONParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import ErrorSerializer, error_body

from . import inbound, slack, slack_comments

logger = logging.getLogger(__name__)


class InteractionInput(serializers.Serializer):
    payload = serializers.CharField(help_text="Slack's interaction payload, JSON (block_actions or view_submission)")


class SlackSignedView(APIView):
    """A Slack endpoint: the body is answered only once Slack's signature over it is verified (signed_body)."""

    # Slack's signature is the authentication: no session (so no CSRF), no bearer token.
    authentication_classes: list = []
    permission_classes = [AllowAny]

    def post(self, request: Request) -> Response:
        body, refused = signed_body(request)
        if refused is not None:
            return refused
        return self.signed_post(body)

    def signed_post(self, body: bytes) -> Response:
        raise NotImplementedError


# What SlackSignedView refuses before any endpoint reads the body: every Slack endpoint can answer these.
SIGNED_REFUSALS = {
    401: OpenApiResponse(ErrorSerializer, description="Not signed by Slack, stale (over 5 minutes) or replayed."),
    413: OpenApiResponse(ErrorSerializer, description="Body over 256 KiB."),
}


def slack_schema(*, responses: dict, **schema: object) -> Callable[[type], type]:
    """A SlackSignedView's OpenAPI operation: its own answers, then the signature's refusals; no auth scheme."""
    return extend_schema_view(post=extend_schema(responses={**responses, **SIGNED_REFUSALS}, auth=[], **schema))


@slack_schema(
    operation_id="slack_interactions",
    summary="Slack interactivity (buttons and the reason modal)",
    description="Slack's Interactivity Request URL. The X-Slack-Signature over the raw body and "
    "X-Slack-Request-Timestamp (within 5 minutes) are verified before anything else; a replayed "
    "signature is refused. The clicking Slack user decides only as the portal reviewer whose email "
    "Slack reports for them; anyone else gets an ephemeral message saying why, and nothing is decided.",
    request={"application/x-www-form-urlencoded": InteractionInput},
    responses={
        200: OpenApiResponse(
            description="Handled. Empty for button clicks; for a modal submission Slack's "
            '`{"response_action": "clear" | "errors" | "update", …}`.'
        ),
        400: OpenApiResponse(ErrorSerializer, description="Signed, but no JSON `payload` form field."),
    },
)
class SlackInteractionsView(SlackSignedView):
    parser_classes = [FormParser]

    def signed_post(self, body: bytes) -> Response:
        payload = _payload(body)
        if payload is None:
            return Response(
                error_body("bad_payload", "The body must be a form with a `payload` field holding a JSON object."), 400
            )
        kind = payload.get("type")
        if kind == "block_actions":
            answer = inbound.slack_block_action(payload=payload)
            if answer.ephemeral:
                inbound.slack_tell(payload=payload, text=answer.ephemeral)
            return Response(status=200)
        if kind == "view_submission":
            answer = inbound.slack_view_submission(payload=payload)
            return Response(answer.body or None, status=200)
        return Response(status=200)  # view_closed, shortcuts…: acknowledged, nothing to do


@slack_schema(
    operation_id="slack_events",
    summary="Slack Events API (replies in a request's thread become comments)",
    description="Slack's Event Subscriptions Request URL (events `message.channels`, `message.groups`). "
    "Signed and checked like the interactions endpoint. `url_verification` is answered with its "
    "challenge. A person's reply in the thread under a request's message is added as their comment "
    "(never a decision), as the portal member whose email Slack reports for them, if they review the "
    "request's workspace; anyone else is told so in an ephemeral message. Bots' posts, edits and other "
    "subtypes do nothing; an event_id acted on before (Slack's retry) does nothing again.",
    request={"application/json": dict},
    responses={
        200: OpenApiResponse(description='Handled: `{}`, or `{"challenge"}` for url_verification.'),
        400: OpenApiResponse(
            ErrorSerializer, description="Signed, but not an event envelope (JSON object with its `type`)."
        ),
    },
)
class SlackEventsView(SlackSignedView):
    parser_classes = [JSONParser]

    def signed_post(self, body: bytes) -> Response:
        envelope = _envelope(body)
        if envelope is None:
            return Response(
                error_body(
                    "bad_payload",
                    "The body must be a JSON object: url_verification with a `challenge`, or event_callback "
                    "with an `event` object and an `event_id`.",
                ),
                400,
            )
        if envelope["type"] == "url_verification":
            return Response({"challenge": envelope["challenge"]}, status=200)
        if envelope["type"] == "event_callback":
            slack_comments.slack_event(envelope=envelope)
        return Response({}, status=200)  # app_rate_limited and the like: acknowledged


def _envelope(body: bytes) -> dict | None:
    try:
        envelope = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(envelope, dict) or not isinstance(envelope.get("type"), str):
        return None
    if envelope["type"] == "url_verification" and not isinstance(envelope.get("challenge"), str):
        return None
    if envelope["type"] == "event_callback":
        event_id = envelope.get("event_id")
        if not isinstance(envelope.get("event"), dict) or not isinstance(event_id, str) or not 0 < len(event_id) <= 64:
            return None
    return envelope


def signed_body(request: Request) -> tuple[bytes, Response | None]:
    """The raw body if Slack signed it (slack.verify_request), else the refusal to answer: every Slack
    endpoint's first step, before anything is parsed."""
    try:
        body = request.body
    except RequestDataTooBig:
        return b"", Response(error_body("payload_too_large", "The body is over 256 KiB; Slack sends far less."), 413)
    try:
        slack.verify_request(
            body=body,
            timestamp=request.headers.get("X-Slack-Request-Timestamp"),
            signature=request.headers.get("X-Slack-Signature"),
        )
    except slack.SignatureRefused as refused:
        return body, Response(error_body(refused.code, refused.message), status=401)
    return body, None


def _payload(body: bytes) -> dict | None:
    try:
        raw = QueryDict(body.decode("utf-8")).get("payload", "")
        payload = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return payload if isinstance(payload, dict) else None
