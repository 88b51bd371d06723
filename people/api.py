"""Approver groups and delegations over the API (API.md, "People"); the services decide, this only maps."""

import datetime

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import ErrorSerializer
from common.fields import JsonInput
from common.pagination import PAGE_PARAMETERS, CursorPagination, page_serializer
from people import selectors, services
from people.exceptions import NotFoundIn
from people.models import DELEGATION_REASON_MAX, GROUP_NAME_MAX, ApproverGroup, Delegation
from workspaces.permissions import IsAdmin, IsWorkspaceActor


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


def _iso(value: datetime.datetime | None) -> str | None:
    return value.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z") if value else None


ERRORS = {401: _error("No or an unknown bearer token."), 403: _error("Not an admin of the workspace.")}


def group_as_dict(group: ApproverGroup) -> dict:
    return {
        "id": group.public_id,
        "name": group.name,
        "members": sorted(member.user.email for member in group.members.all()),
        "created_at": _iso(group.created_at),
    }


def delegation_as_dict(delegation: Delegation) -> dict:
    return {
        "id": delegation.public_id,
        "delegator": delegation.delegator.email,
        "delegate": delegation.delegate.email,
        "until": _iso(delegation.until),
        "reason": delegation.reason,
        "created_at": _iso(delegation.created_at),
        "ended_at": _iso(delegation.ended_at),
        "ended_by": delegation.ended_by_email or None,
        "active": delegation.ended_at is None and delegation.until > datetime.datetime.now(datetime.UTC),
    }


class GroupSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="grp_…")
    name = serializers.CharField()
    members = serializers.ListField(child=serializers.EmailField(), help_text="members' emails")
    created_at = serializers.DateTimeField()


class DelegationSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="dlg_…")
    delegator = serializers.EmailField(help_text="whose decisions the delegate may make")
    delegate = serializers.EmailField(help_text="who stands in")
    until = serializers.DateTimeField()
    reason = serializers.CharField(allow_blank=True)
    created_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True)
    ended_by = serializers.EmailField(allow_null=True)
    active = serializers.BooleanField(help_text="not ended and `until` still ahead")


class GroupInput(JsonInput):
    name = serializers.CharField(max_length=GROUP_NAME_MAX)


class MemberInput(JsonInput):
    email = serializers.CharField(max_length=254)


class DelegationInput(JsonInput):
    delegate = serializers.CharField(max_length=254, help_text="a member of this workspace")
    until = serializers.DateTimeField(help_text="in the future, at most 30 days away")
    reason = serializers.CharField(max_length=DELEGATION_REASON_MAX, required=False, allow_blank=True, default="")


class NamePagination(CursorPagination):
    page_size = 50
    ordering = ("name", "id")


class NewestPagination(CursorPagination):
    page_size = 50
    ordering = ("-created_at", "-id")


GroupPage = page_serializer(GroupSerializer(many=True), "GroupPage")
DelegationPage = page_serializer(DelegationSerializer(many=True), "DelegationPage")
TAG = ["people"]


class GroupListView(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(
        tags=TAG,
        operation_id="groups_list",
        summary="List approver groups (admins)",
        parameters=PAGE_PARAMETERS,
        responses={200: GroupPage, 400: _error("A bad page parameter."), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        paginator = NamePagination()
        page = paginator.paginate_queryset(selectors.groups_for(request.actor.workspace), request)
        return paginator.get_paginated_response([group_as_dict(group) for group in page])

    @extend_schema(
        tags=TAG,
        operation_id="groups_create",
        summary="Create an approver group (admins)",
        description="A rule's `approver_groups` names groups: only their members (and their live delegates) "
        "decide its requests. Audited as `group.created`.",
        request=GroupInput,
        responses={
            201: GroupSerializer,
            400: _error("No name, or one over 100 characters."),
            409: _error("A group of this name exists."),
            **ERRORS,
        },
    )
    def post(self, request: Request) -> Response:
        body = GroupInput(data=request.data)
        body.is_valid(raise_exception=True)
        group = services.group_create(
            workspace=request.actor.workspace, name=body.validated_data["name"], user=request.user
        )
        return Response(
            group_as_dict(selectors.group_get(workspace=request.actor.workspace, public_id=group.public_id)), status=201
        )


class GroupDetailView(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(
        tags=TAG,
        operation_id="groups_read",
        summary="One approver group (admins)",
        responses={200: GroupSerializer, **ERRORS, 404: _error("No such group in this workspace.")},
    )
    def get(self, request: Request, grp: str) -> Response:
        return Response(group_as_dict(selectors.group_get(workspace=request.actor.workspace, public_id=grp)))


class GroupMembersView(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(
        tags=TAG,
        operation_id="groups_member_add",
        summary="Add a member to a group (admins)",
        description="Adding someone already in the group changes nothing. Audited as `group.member_added`.",
        request=MemberInput,
        responses={
            201: GroupSerializer,
            400: _error("`email` is not a member of this workspace."),
            **ERRORS,
            404: _error("No such group in this workspace."),
        },
    )
    def post(self, request: Request, grp: str) -> Response:
        workspace = request.actor.workspace
        group = selectors.group_get(workspace=workspace, public_id=grp)
        body = MemberInput(data=request.data)
        body.is_valid(raise_exception=True)
        services.group_member_add(group=group, email=body.validated_data["email"], user=request.user)
        return Response(group_as_dict(selectors.group_get(workspace=workspace, public_id=grp)), status=201)


class GroupMemberView(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(
        tags=TAG,
        operation_id="groups_member_remove",
        summary="Remove a member from a group (admins)",
        description="Audited as `group.member_removed`.",
        responses={204: None, **ERRORS, 404: _error("No such group, or the email is not in it.")},
    )
    def delete(self, request: Request, grp: str, email: str) -> Response:
        group = selectors.group_get(workspace=request.actor.workspace, public_id=grp)
        services.group_member_remove(group=group, email=email, user=request.user)
        return Response(status=204)


class MyDelegationView(APIView):
    permission_classes = [IsWorkspaceActor]

    def _person(self, request: Request) -> None:
        if request.actor.user is None:
            raise PermissionDenied("An engine key has no delegation: use a person's token.")

    @extend_schema(
        tags=TAG,
        operation_id="me_delegation_read",
        summary="My live delegation",
        responses={
            200: DelegationSerializer,
            401: _error("No or an unknown bearer token."),
            403: _error("An engine key."),
            404: _error("You have no live delegation."),
        },
    )
    def get(self, request: Request) -> Response:
        self._person(request)
        delegation = selectors.delegation_of(workspace=request.actor.workspace, user=request.actor.user)
        if delegation is None:
            raise NotFoundIn("delegation", "You have no live delegation: PUT one to name a stand-in.")
        return Response(delegation_as_dict(delegation))

    @extend_schema(
        tags=TAG,
        operation_id="me_delegation_set",
        summary="Name a stand-in until a time (out of office)",
        description="Until `until` (at most 30 days) the delegate decides what you could (approver groups "
        "included), on your behalf (`decision.on_behalf_of`), and receives your notifications too. A delegate "
        "never approves what you requested. Replaces your live delegation. Audited as `delegation.started`.",
        request=DelegationInput,
        responses={
            200: DelegationSerializer,
            400: _error("`delegate` not a member of this workspace (or you), `until` past or beyond 30 days."),
            401: _error("No or an unknown bearer token."),
            403: _error("An engine key."),
        },
    )
    def put(self, request: Request) -> Response:
        self._person(request)
        body = DelegationInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        delegation = services.delegation_start(
            workspace=request.actor.workspace,
            delegator=request.actor.user,
            delegate_email=data["delegate"],
            until=data["until"],
            reason=data["reason"],
        )
        return Response(delegation_as_dict(delegation))

    @extend_schema(
        tags=TAG,
        operation_id="me_delegation_end",
        summary="End my delegation now",
        description="Audited as `delegation.ended`. Without a live delegation it changes nothing.",
        responses={204: None, 401: _error("No or an unknown bearer token."), 403: _error("An engine key.")},
    )
    def delete(self, request: Request) -> Response:
        self._person(request)
        delegation = selectors.delegation_of(workspace=request.actor.workspace, user=request.actor.user)
        if delegation is not None:
            services.delegation_end(delegation=delegation, user=request.actor.user)
        return Response(status=204)


class DelegationListView(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(
        tags=TAG,
        operation_id="delegations_list",
        summary="Every delegation of the workspace, newest first (admins)",
        parameters=PAGE_PARAMETERS,
        responses={200: DelegationPage, 400: _error("A bad page parameter."), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        paginator = NewestPagination()
        page = paginator.paginate_queryset(selectors.delegations_for(workspace=request.actor.workspace), request)
        return paginator.get_paginated_response([delegation_as_dict(delegation) for delegation in page])


class DelegationDetailView(APIView):
    permission_classes = [IsAdmin]

    @extend_schema(
        tags=TAG,
        operation_id="delegations_end",
        summary="End a delegation now (admins)",
        description="Audited as `delegation.ended`; ending an ended one changes nothing and answers 204 too.",
        responses={204: None, **ERRORS, 404: _error("No such delegation in this workspace.")},
    )
    def delete(self, request: Request, dlg: str) -> Response:
        delegation = selectors.delegations_for(workspace=request.actor.workspace).filter(public_id=dlg).first()
        if delegation is None:
            raise NotFoundIn("delegation", f"No delegation {dlg} in this workspace.")
        services.delegation_end(delegation=delegation, user=request.user)
        return Response(status=204)
