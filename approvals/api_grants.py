"""Run grants (API.md, Reviewers): list them, revoke one. Created by a decision with `grant: run`."""

import datetime

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from hitl_portal.errors import ErrorSerializer
from hitl_portal.pagination import PAGE_PARAMETERS, CursorPagination, page_serializer
from hitl_portal.query import QueryBooleanField, QuerySerializer

from . import selectors
from .grants import grant_revoke
from .models import Grant
from .permissions import MayDecide

TAG = ["grants"]


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


def _iso(value) -> str | None:
    return value.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z") if value else None


class GrantSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="grt_…")
    config_id = serializers.CharField()
    rule_id = serializers.CharField()
    run_id = serializers.CharField()
    granted_by = serializers.EmailField()
    created_at = serializers.DateTimeField()
    expires_at = serializers.DateTimeField()
    revoked_at = serializers.DateTimeField(allow_null=True)
    uses = serializers.IntegerField(help_text="later requests of the run it approved")

    def to_representation(self, grant: Grant) -> dict:
        return grant_as_dict(grant)


def grant_as_dict(grant: Grant) -> dict:
    return {
        "id": grant.public_id,
        "config_id": grant.config.public_id,
        "rule_id": grant.rule_id,
        "run_id": grant.run_id,
        "granted_by": grant.granted_by_email,
        "created_at": _iso(grant.created_at),
        "expires_at": _iso(grant.expires_at),
        "revoked_at": _iso(grant.revoked_at),
        "uses": grant.uses,
    }


class GrantFilters(QuerySerializer):
    active = QueryBooleanField(required=False)


GrantPage = page_serializer(GrantSerializer(many=True), "GrantPage")


class GrantPagination(CursorPagination):
    page_size = 50
    ordering = ("-created_at", "-id")


ERRORS = {
    401: _error("No or an unknown bearer token."),
    403: _error("An engine key, or not a reviewer or admin of the workspace."),
}


class GrantListView(APIView):
    permission_classes = [MayDecide]

    @extend_schema(
        tags=TAG,
        operation_id="grants_list",
        summary="List run grants",
        description="Newest first. `active=true`: only live grants (not revoked, not expired); `false`: only the "
        "others.",
        parameters=[
            OpenApiParameter("active", bool, description="true: live grants only; false: ended ones only"),
            *PAGE_PARAMETERS,
        ],
        responses={
            200: GrantPage,
            400: _error("`active` is not true or false, or a page parameter is wrong; `fields` names it."),
            **ERRORS,
        },
    )
    def get(self, request: Request) -> Response:
        filters = GrantFilters(data=request.query_params)
        filters.is_valid(raise_exception=True)
        grants = selectors.grants_for(request.actor.workspace, active=filters.validated_data.get("active"))
        paginator = GrantPagination()
        page = paginator.paginate_queryset(grants, request)
        return paginator.get_paginated_response([grant_as_dict(grant) for grant in page])


class GrantDetailView(APIView):
    permission_classes = [MayDecide]

    @extend_schema(
        tags=TAG,
        operation_id="grants_revoke",
        summary="Revoke a run grant",
        description="At once: the next registration of that run pends again. Revoking an ended grant changes "
        "nothing and also answers 204.",
        responses={204: None, **ERRORS, 404: _error("No such grant in this workspace.")},
    )
    def delete(self, request: Request, grt: str) -> Response:
        grant = selectors.grant_get(workspace=request.actor.workspace, public_id=grt)
        grant_revoke(grant=grant, user=request.user)
        return Response(status=204)
