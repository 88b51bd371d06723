"""`POST /api/v1/approvals/{apr}/withdraw`: the requester (or its engine) takes a pending request back."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.presenters.api import ApprovalRequestSerializer, approval_as_dict
from approvals.review import selectors
from approvals.review.decide import REASON_MAX
from approvals.review.withdraw import approval_withdraw
from common.errors import ErrorSerializer
from common.fields import JsonInput
from workspaces.permissions import IsWorkspaceActor


class WithdrawInput(JsonInput):
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=REASON_MAX,
        help_text=f"passed back to the agent; at most {REASON_MAX:,} characters",
    )


class WithdrawOutput(ApprovalRequestSerializer):
    already_decided = serializers.BooleanField(
        help_text="true when the request had ended before: the body is how it ended, unchanged"
    )

    def to_representation(self, instance: dict) -> dict:
        return instance


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


class WithdrawView(APIView):
    permission_classes = [IsWorkspaceActor]

    @extend_schema(
        operation_id="approvals_withdraw",
        summary="Withdraw a pending request",
        description="By the member named in its `requested_by`, or the engine key that registered it: "
        '`status: "withdrawn"`, `decision.outcome` rejected, `decision.action` halt (stop_run for a token cap), '
        "`decision.withdrawn: true`; its waiting engine halts, and nothing decides it afterwards. An ended request "
        "answers 200 as it is, with `already_decided: true`.",
        request=WithdrawInput,
        responses={
            200: WithdrawOutput,
            400: _error("Bad JSON, or a reason over 2000 characters."),
            401: _error("No or an unknown bearer token."),
            403: _error("Neither its requester nor the engine key that registered it (`forbidden`)."),
            404: _error("No such request in this workspace."),
        },
    )
    def post(self, request: Request, apr: str) -> Response:
        approval = selectors.approval_get(workspace=request.actor.workspace, public_id=apr)
        body = WithdrawInput(data=request.data)
        body.is_valid(raise_exception=True)
        approval, already = approval_withdraw(
            approval=approval, actor=request.actor, reason=body.validated_data["reason"]
        )
        return Response({**approval_as_dict(approval), "already_decided": already})
