"""Run grants (API.md, Reviewers) and rule windows (API.md, Policy): list them, revoke one, open a window.

A run grant is created by a decision with `grant: run`; a rule window by an admin's POST here."""

import datetime

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.grants.services import grant_revoke
from approvals.grants.windows import REASON_MAX, rule_window_create
from approvals.models import Grant, GrantScope
from approvals.review import selectors
from approvals.review.permissions import MayDecide
from common.errors import ErrorSerializer
from common.fields import JsonInput
from common.pagination import PAGE_PARAMETERS, CursorPagination, page_serializer
from common.query import QueryBooleanField, QuerySerializer

TAG = ["grants"]


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


def _iso(value) -> str | None:
    return value.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z") if value else None


class GrantSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="grt_…")
    config_id = serializers.CharField()
    rule_id = serializers.CharField()
    scope = serializers.ChoiceField(choices=GrantScope.values, help_text="run: a run grant; rule: a rule window")
    run_id = serializers.CharField(allow_null=True, help_text="the run a run grant covers; null for a rule window")
    reason = serializers.CharField(allow_null=True, help_text="why a rule window was opened; null for a run grant")
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
        "scope": grant.scope,
        "run_id": grant.run_id or None,
        "reason": grant.reason if grant.scope == GrantScope.RULE else None,
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


class WindowInputSerializer(JsonInput):
    scope = serializers.ChoiceField(
        choices=[GrantScope.RULE.value],
        error_messages={
            "invalid_choice": "Only a rule window (scope rule) is opened here; a run grant comes with an approval "
            '(decision approve, grant "run").'
        },
    )
    rule_id = serializers.CharField(max_length=24)
    expires_at = serializers.DateTimeField(help_text="at most 7 days from now")
    reason = serializers.CharField(max_length=REASON_MAX)


class GrantListView(APIView):
    permission_classes = [MayDecide]

    @extend_schema(
        tags=TAG,
        operation_id="grants_list",
        summary="List run grants and rule windows",
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

    @extend_schema(
        tags=TAG,
        operation_id="grants_open_window",
        summary="Open a rule window (admins)",
        description="Every registration under the rule until `expires_at` (at most 7 days) is stored already "
        "approved with this grant (`decision.grant_id`), like a run grant. Audited as `grant.created`; revoke it "
        "with DELETE like any grant.",
        request=WindowInputSerializer,
        responses={
            201: GrantSerializer,
            400: _error("Not scope rule, an unknown rule, an expiry in the past or beyond 7 days, or no reason."),
            401: _error("No or an unknown bearer token."),
            403: _error("Not an admin of the workspace."),
        },
    )
    def post(self, request: Request) -> Response:
        actor = request.actor
        if not actor.is_admin:
            raise PermissionDenied("Only a workspace admin may open a rule window.")
        serializer = WindowInputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        grant = rule_window_create(
            workspace=actor.workspace,
            user=request.user,
            rule_id=data["rule_id"],
            expires_at=data["expires_at"],
            reason=data["reason"],
        )
        return Response(grant_as_dict(grant), status=201)


class GrantDetailView(APIView):
    permission_classes = [MayDecide]

    @extend_schema(
        tags=TAG,
        operation_id="grants_revoke",
        summary="Revoke a run grant or a rule window",
        description="At once: the next registration of that run pends again. Revoking an ended grant changes "
        "nothing and also answers 204.",
        responses={204: None, **ERRORS, 404: _error("No such grant in this workspace.")},
    )
    def delete(self, request: Request, grt: str) -> Response:
        grant = selectors.grant_get(workspace=request.actor.workspace, public_id=grt)
        grant_revoke(grant=grant, user=request.user)
        return Response(status=204)
