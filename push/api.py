"""Subscribing a browser to Web Push: what the account page's script (static/js/push.js) calls.

`POST /api/v1/push/subscriptions` with the browser's PushSubscription JSON subscribes it for the
person in the current workspace; `DELETE …?endpoint=` unsubscribes it. People only — an
engine key has no browser — and through the session, CSRF-checked like every session call.
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import ErrorSerializer
from workspaces.permissions import actor_of

from .serializers import SubscribeSerializer, SubscriptionSerializer, UnsubscribeSerializer
from .services import SubscriptionRefused, push_subscription_delete, push_subscription_save

TAG = ["notifications"]
ERRORS = {
    400: OpenApiResponse(ErrorSerializer, description="Not a push subscription; `fields` names what is wrong."),
    401: OpenApiResponse(ErrorSerializer, description="Not logged in, or an unknown or revoked token."),
    403: OpenApiResponse(ErrorSerializer, description="Not a reviewer or admin of the workspace (or an engine key)."),
}


class IsReviewingPerson(BasePermission):
    message = "Only a reviewer or an admin of this workspace may subscribe a browser."

    def has_permission(self, request: Request, view: APIView) -> bool:
        actor = actor_of(request)
        return actor is not None and actor.user is not None and actor.can_review


class PushSubscriptionsView(APIView):
    permission_classes = [IsReviewingPerson]

    @extend_schema(
        tags=TAG,
        operation_id="push_subscribe",
        summary="Subscribe this browser to Web Push",
        request=SubscribeSerializer,
        responses={201: SubscriptionSerializer, 200: SubscriptionSerializer, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = SubscribeSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        given = data.validated_data
        try:
            subscription, created = push_subscription_save(
                workspace=request.actor.workspace,
                user=request.actor.user,
                endpoint=given["endpoint"],
                p256dh=given["keys"]["p256dh"],
                auth=given["keys"]["auth"],
                user_agent=request.headers.get("User-Agent", ""),
            )
        except SubscriptionRefused as refused:
            raise serializers.ValidationError({refused.field: [refused.message]}) from None
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(SubscriptionSerializer(subscription).data, status=code)

    @extend_schema(
        tags=TAG,
        operation_id="push_unsubscribe",
        summary="Unsubscribe this browser",
        description="Its `endpoint` as the query; 204 whether or not it was subscribed (for this person, here).",
        parameters=[UnsubscribeSerializer],
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request) -> Response:
        data = UnsubscribeSerializer(data=request.query_params)
        data.is_valid(raise_exception=True)
        push_subscription_delete(
            workspace=request.actor.workspace, user=request.actor.user, endpoint=data.validated_data["endpoint"]
        )
        return Response(status=status.HTTP_204_NO_CONTENT)
