"""`POST /api/v1/approvals/decide` (API.md, People): several requests decided at once, each as if alone."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.models import Status
from approvals.review.batch import BATCH_MAX, approvals_decide_batch
from approvals.review.decide import DECISIONS, REASON_MAX
from approvals.review.permissions import MayDecide
from common.errors import ERROR_CODES, ErrorSerializer
from common.fields import JsonInput, StrictCharField

OUTCOME_CODES = ["already_decided", "already_voted", "voted"]


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


class BatchInput(JsonInput):
    ids = serializers.ListField(
        child=StrictCharField(max_length=24),
        min_length=1,
        max_length=BATCH_MAX,
        help_text=f"1–{BATCH_MAX} request ids (apr_…) of this workspace; one named twice is decided once",
        error_messages={
            "max_length": f"A batch decides at most {BATCH_MAX} requests: send the rest in another batch.",
            "min_length": "Name at least one request (apr_…) in ids.",
        },
    )
    decision = serializers.ChoiceField(choices=list(DECISIONS))
    reason = serializers.CharField(max_length=REASON_MAX, required=False, allow_blank=True, default="")


class BatchItem(serializers.Serializer):
    id = serializers.CharField()
    status = serializers.ChoiceField(choices=Status.values, help_text="the request as it now is")
    code = serializers.ChoiceField(
        choices=sorted({*OUTCOME_CODES, *ERROR_CODES}),
        required=False,
        help_text="absent when this call decided it; else why not: already_decided, already_voted, voted (a quorum "
        "vote recorded, still pending), or the refusal a single decision would answer (passkey_required, "
        "self_approval, not_an_approver, invalid)",
    )
    message = serializers.CharField(required=False, help_text="with code: what a person can do about it")
    url = serializers.CharField(required=False, help_text="with passkey_required: the request's page")


class BatchOutput(serializers.Serializer):
    results = BatchItem(many=True, help_text="one per distinct id, in the order sent")


class BatchDecisionView(APIView):
    permission_classes = [MayDecide]

    @extend_schema(
        tags=["reviewers"],
        operation_id="approvals_decide_batch",
        summary="Decide several requests at once",
        description="Each request is decided through the same service as `POST /api/v1/approvals/{apr}/decision`, "
        "as if alone: its own decision, receipt and audit record. An item needing more than this call gives "
        "(a quorum's further votes, a passkey on its page, four eyes, an approver group) is answered with its "
        "`code` and never decided silently. An id of another workspace (or none) answers 404 naming `ids`, and "
        "nothing is decided.",
        request=BatchInput,
        responses={
            200: BatchOutput,
            400: _error("No ids or more than 100, an unknown decision, or a reason over 2000; `fields` names it."),
            401: _error("No or an unknown bearer token."),
            403: _error("An engine key, or not a reviewer or admin of the workspace."),
            404: _error("An id names no request of this workspace (`fields.ids` names them); nothing was decided."),
        },
    )
    def post(self, request: Request) -> Response:
        body = BatchInput(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        results = approvals_decide_batch(
            workspace=request.actor.workspace,
            user=request.actor.user,
            ids=data["ids"],
            decision=data["decision"],
            reason=data["reason"],
        )
        return Response({"results": [result.as_dict() for result in results]})
