"""POST /integrations/slack/interactions: Slack's buttons and modals, signature first."""

import json
import logging

from django.core.exceptions import RequestDataTooBig
from django.http import QueryDict
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.parsers import FormParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import ErrorSerializer, error_body

from . import inbound, slack

logger = logging.getLogger(__name__)


class InteractionInput(serializers.Serializer):
    payload = serializers.CharField(help_text="Slack's interaction payload, JSON (block_actions or view_submission)")


class SlackInteractionsView(APIView):
    # Slack's signature is the authentication: no session (so no CSRF), no bearer token.
    authentication_classes: list = []
    permission_classes = [AllowAny]
    parser_classes = [FormParser]

    @extend_schema(
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
            401: OpenApiResponse(
                ErrorSerializer, description="Not signed by Slack, stale (over 5 minutes) or replayed."
            ),
            413: OpenApiResponse(ErrorSerializer, description="Body over 256 KiB."),
        },
        auth=[],
    )
    def post(self, request: Request) -> Response:
        try:
            body = request.body
        except RequestDataTooBig:
            return Response(error_body("payload_too_large", "The body is over 256 KiB; Slack sends far less."), 413)
        try:
            slack.verify_request(
                body=body,
                timestamp=request.headers.get("X-Slack-Request-Timestamp"),
                signature=request.headers.get("X-Slack-Signature"),
            )
        except slack.SignatureRefused as refused:
            return Response(error_body(refused.code, refused.message), status=401)

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


def _payload(body: bytes) -> dict | None:
    try:
        raw = QueryDict(body.decode("utf-8")).get("payload", "")
        payload = json.loads(raw)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return payload if isinstance(payload, dict) else None
