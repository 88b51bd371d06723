"""Halting a run, freezing a workspace (docs/api.md, "Halting"): the API over approvals/halts/services.py."""

import datetime

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.halts.services import Halted, run_halt, run_resume, workspace_freeze, workspace_thaw
from approvals.review.decide import REASON_MAX
from approvals.review.permissions import MayDecide
from common.errors import ErrorSerializer
from common.fields import JsonInput
from rules.selectors import config_for
from workspaces.permissions import actor_of

TAG = ["reviewers"]


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


def _iso(value) -> str | None:
    return value.astimezone(datetime.UTC).isoformat().replace("+00:00", "Z") if value else None


class IsAdminPerson(BasePermission):
    """A workspace admin signed in as a person (never an engine key): freezing stops every run."""

    message = "Only a workspace admin may freeze or thaw the workspace."

    def has_permission(self, request: Request, view: APIView) -> bool:
        actor = actor_of(request)
        return actor is not None and actor.user is not None and actor.is_admin


REASON_HELP = f"why; passed back to every engine it stops (at most {REASON_MAX:,} characters)"


class HaltInput(JsonInput):
    run_id = serializers.CharField(max_length=500, trim_whitespace=False, help_text="the run to halt")
    config_id = serializers.CharField(
        max_length=24, required=False, help_text="only the run's requests under this config (cfg_…)"
    )
    reason = serializers.CharField(help_text=REASON_HELP)


class FreezeInput(JsonInput):
    reason = serializers.CharField(help_text=REASON_HELP)


class HaltSerializer(serializers.Serializer):
    run_id = serializers.CharField(allow_null=True, help_text="null for a workspace freeze")
    config_id = serializers.CharField(allow_null=True)
    reason = serializers.CharField()
    halted_by = serializers.CharField()
    halted_at = serializers.DateTimeField()
    rejected = serializers.IntegerField(help_text="pending requests it rejected at once")
    grants_revoked = serializers.IntegerField(help_text="live run grants it revoked")


def halted_as_dict(halted: Halted) -> dict:
    halt = halted.halt
    return {
        "run_id": halt.run_id or None,
        "config_id": halt.config.public_id if halt.config is not None else None,
        "reason": halt.reason,
        "halted_by": halt.halted_by_email,
        "halted_at": _iso(halt.created_at),
        "rejected": halted.rejected,
        "grants_revoked": halted.grants_revoked,
    }


ERRORS = {
    401: _error("No or an unknown bearer token."),
    403: _error("An engine key, or not a reviewer or admin of the workspace."),
}


class RunHaltView(APIView):
    permission_classes = [MayDecide]

    @extend_schema(
        tags=TAG,
        operation_id="runs_halt",
        summary="Halt a run",
        description="Rejects every pending request of the run (`decision.action: halt`, the reason given, "
        "`decided_by` the reviewer) — its waiting engines are answered at once — revokes its run grants, and "
        "stores every later registration of the run already rejected with that reason, until "
        "`DELETE /api/v1/runs/halt/{run_id}`. `config_id`: only the run's requests under that config.",
        request=HaltInput,
        responses={
            200: HaltSerializer,
            400: _error("Bad JSON, no run_id, no reason or one over 2000 characters; `fields` names it."),
            **ERRORS,
            404: _error("No such config in this workspace."),
        },
    )
    def post(self, request: Request) -> Response:
        body = HaltInput(data=request.data)
        body.is_valid(raise_exception=True)
        workspace = request.actor.workspace
        config_id = body.validated_data.get("config_id")
        config = config_for(workspace=workspace, public_id=config_id) if config_id else None
        halted = run_halt(
            workspace=workspace,
            user=request.actor.user,
            run_id=body.validated_data["run_id"],
            config=config,
            reason=body.validated_data["reason"],
        )
        return Response(halted_as_dict(halted))


class RunResumeView(APIView):
    permission_classes = [MayDecide]

    @extend_schema(
        tags=TAG,
        operation_id="runs_resume",
        summary="Lift a run's halt",
        description="Later registrations of the run pend again (what the halt rejected stays rejected). "
        "Lifting a run that is not halted changes nothing and also answers 204.",
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, run_id: str) -> Response:
        run_resume(workspace=request.actor.workspace, user=request.actor.user, run_id=run_id)
        return Response(status=204)


class WorkspaceFreezeView(APIView):
    permission_classes = [IsAdminPerson]

    @extend_schema(
        tags=TAG,
        operation_id="workspace_freeze",
        summary="Freeze the workspace",
        description="A halt of every run at once: rejects every pending request of the workspace, revokes "
        "its run grants, and stores every later registration already rejected with the reason, until "
        "`DELETE /api/v1/workspace/freeze`. Every page shows a banner while it is frozen. Admins only.",
        request=FreezeInput,
        responses={
            200: HaltSerializer,
            400: _error("Bad JSON, no reason or one over 2000 characters; `fields` names it."),
            401: _error("No or an unknown bearer token."),
            403: _error("An engine key, or not an admin of the workspace."),
        },
    )
    def post(self, request: Request) -> Response:
        body = FreezeInput(data=request.data)
        body.is_valid(raise_exception=True)
        halted = workspace_freeze(
            workspace=request.actor.workspace, user=request.actor.user, reason=body.validated_data["reason"]
        )
        return Response(halted_as_dict(halted))

    @extend_schema(
        tags=TAG,
        operation_id="workspace_thaw",
        summary="Thaw the workspace",
        description="Later registrations pend again. Thawing a workspace that is not frozen answers 204 too.",
        responses={
            204: None,
            401: _error("No or an unknown bearer token."),
            403: _error("An engine key, or not an admin of the workspace."),
        },
    )
    def delete(self, request: Request) -> Response:
        workspace_thaw(workspace=request.actor.workspace, user=request.actor.user)
        return Response(status=204)
