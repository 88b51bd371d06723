"""Deliveries over the API (API.md, Notifications): the log, and a test event to a draft contact."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import ErrorSerializer
from common.pagination import page_serializer
from common.query import QuerySerializer
from rules.api import BAD_INPUT, ERRORS, PAGE_PARAMS, AdminPagination, AdminView
from workspaces.permissions import actor_of

from . import selectors
from .api import _contact
from .models import Channel, Delivery, DeliveryEvent, DeliveryStatus
from .services import contact_test


class DeliverySerializer(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    approval_id = serializers.SerializerMethodField()
    contact_id = serializers.CharField(source="contact_public_id")
    event = serializers.ChoiceField(choices=DeliveryEvent.choices)
    channel = serializers.ChoiceField(choices=Channel.choices)
    status = serializers.ChoiceField(choices=DeliveryStatus.choices)
    attempts = serializers.IntegerField()
    last_error = serializers.CharField(allow_blank=True, help_text="names the problem, never an address or secret")
    created_at = serializers.DateTimeField()
    sent_at = serializers.DateTimeField(allow_null=True)

    def get_approval_id(self, delivery: Delivery) -> str | None:
        return delivery.approval.public_id if delivery.approval_id else None


class DeliveryFilters(QuerySerializer):
    approval = serializers.RegexField(
        r"^apr_[A-Za-z0-9]+$",
        required=False,
        help_text="a request id (apr_…)",
        error_messages={"invalid": "approval must be a request id (apr_…)."},
    )
    contact = serializers.RegexField(
        r"^con_[A-Za-z0-9]+$",
        required=False,
        help_text="a contact id (con_…)",
        error_messages={"invalid": "contact must be a contact id (con_…)."},
    )
    status = serializers.ChoiceField(choices=DeliveryStatus.values, required=False)


class DeliveryPagination(AdminPagination):
    ordering = ("-created_at", "-id")


DeliveryPage = page_serializer(DeliverySerializer(many=True), "DeliveryPage")


class ReadsDeliveries(BasePermission):
    """Reviewers and admins (people, never an engine key) read their workspace's deliveries."""

    message = "Only a reviewer or an admin of this workspace may read deliveries."

    def has_permission(self, request: Request, view: APIView) -> bool:
        actor = actor_of(request)
        return actor is not None and actor.user is not None and actor.can_review


class DeliveryListView(APIView):
    permission_classes = [ReadsDeliveries]

    @extend_schema(
        tags=["notifications"],
        operation_id="deliveries_list",
        summary="Deliveries, newest first",
        description="The workspace's notification log (admins and reviewers).",
        parameters=[
            OpenApiParameter("approval", str, pattern=r"^apr_[A-Za-z0-9]+$", description="a request id (apr_…)"),
            OpenApiParameter("contact", str, pattern=r"^con_[A-Za-z0-9]+$", description="a contact id (con_…)"),
            OpenApiParameter("status", str, enum=DeliveryStatus.values),
            *PAGE_PARAMS,
        ],
        responses={
            200: DeliveryPage,
            400: OpenApiResponse(ErrorSerializer, description="A filter value is wrong; `fields` names it."),
            401: OpenApiResponse(ErrorSerializer, description="No or an unknown bearer token."),
            403: OpenApiResponse(ErrorSerializer, description="Not a reviewer or admin of the workspace."),
        },
    )
    def get(self, request: Request) -> Response:
        filters = DeliveryFilters(data=request.query_params)
        filters.is_valid(raise_exception=True)
        rows = selectors.deliveries_for(request.actor.workspace, **filters.validated_data)
        paginator = DeliveryPagination()
        page = paginator.paginate_queryset(rows, request, self)
        return paginator.get_paginated_response(DeliverySerializer(page, many=True).data)


class ContactTestView(AdminView):
    @extend_schema(
        tags=["configs"],
        operation_id="configs_contacts_test",
        summary="Queue a test event to a draft contact",
        request=None,
        responses={202: DeliverySerializer, **BAD_INPUT, **ERRORS},
    )
    def post(self, request: Request, cfg: str, con: str) -> Response:
        delivery = contact_test(contact=_contact(request, cfg, con))
        return Response(DeliverySerializer(delivery).data, status=status.HTTP_202_ACCEPTED)
