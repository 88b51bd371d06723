"""POST /integrations/telegram/webhook: the bot's updates (button presses, replies), the secret first."""

import json

from django.core.exceptions import RequestDataTooBig
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.parsers import JSONParser
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import ErrorSerializer, error_body

from . import telegram, telegram_inbound


class TelegramWebhookView(APIView):
    # The secret header is the authentication: no session (so no CSRF), no bearer token.
    authentication_classes: list = []
    permission_classes = [AllowAny]
    parser_classes = [JSONParser]

    @extend_schema(
        operation_id="telegram_webhook",
        summary="Telegram bot updates (inline buttons and reason replies)",
        description="The bot's webhook (`hitl telegram set-webhook` registers it). Refused unless the header "
        "X-Telegram-Bot-Api-Secret-Token equals HITL_TELEGRAM_WEBHOOK_SECRET, checked before the body is read. "
        "An update_id received before is acknowledged and ignored. The pressing Telegram user decides only "
        "as the portal reviewer who linked that Telegram account; anyone else gets an alert saying why.",
        request={"application/json": dict},
        responses={
            200: OpenApiResponse(description="Handled (or a replay, ignored): `{}`."),
            400: OpenApiResponse(ErrorSerializer, description="Not a JSON object with an integer update_id."),
            401: OpenApiResponse(ErrorSerializer, description="The secret header is missing or wrong."),
            413: OpenApiResponse(ErrorSerializer, description="Body over 256 KiB."),
        },
        auth=[],
    )
    def post(self, request: Request) -> Response:
        try:
            telegram.verify_secret(request.headers.get("X-Telegram-Bot-Api-Secret-Token"))
        except telegram.WebhookRefused as refused:
            return Response(error_body(refused.code, refused.message), status=401)
        try:
            body = request.body
        except RequestDataTooBig:
            return Response(error_body("payload_too_large", "The body is over 256 KiB; Telegram sends far less."), 413)
        update = _update(body)
        if update is None:
            return Response(error_body("bad_update", "The body must be a JSON object with an integer update_id."), 400)
        # A replay (or Telegram retrying an update we handled) is acknowledged, so Telegram stops
        # sending it, and does nothing.
        if telegram_inbound.update_first_time(update["update_id"]):
            telegram_inbound.telegram_update(update=update)
        return Response({}, status=200)


def _update(body: bytes) -> dict | None:
    try:
        update = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(update, dict):
        return None
    update_id = update.get("update_id")
    if not isinstance(update_id, int) or isinstance(update_id, bool) or not 0 <= update_id < 2**63:
        return None
    return update
