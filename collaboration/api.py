"""The API of comments, claims, snoozes and a run's story (docs/api.md, "People")."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from approvals.presenters.api import ApprovalRequestSerializer, approvals_read
from approvals.review import selectors as approval_selectors
from approvals.review.permissions import MayDecide
from collaboration import selectors, services
from collaboration.models import COMMENT_MAX
from collaboration.presenters import claim_as_dict, comment_as_dict
from common.errors import ErrorSerializer
from common.fields import JsonInput
from common.pagination import CURSOR_PATTERN, cursor_refused, page_serializer
from common.query import refuse_blank


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


COMMON_ERRORS = {
    401: _error("No or an unknown bearer token."),
    403: _error("An engine key, or not a reviewer or admin of the workspace."),
    404: _error("No such request in this workspace."),
}


class CommentSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="cmt_…")
    approval_id = serializers.CharField()
    author = serializers.CharField(help_text="the author's email")
    text = serializers.CharField(help_text="as written; shown escaped and bidi-safe")
    via = serializers.CharField(help_text="page, api, cli, slack or telegram")
    created_at = serializers.DateTimeField()


class CommentInput(JsonInput):
    text = serializers.CharField(
        trim_whitespace=False,
        allow_blank=True,
        max_length=COMMENT_MAX,
        help_text=f"at most {COMMENT_MAX:,} characters, not blank; never decides",
    )


class CommentListSerializer(serializers.Serializer):
    results = CommentSerializer(many=True)


class CommentsView(APIView):
    permission_classes = [MayDecide]

    def _approval(self, request: Request, apr: str):
        approval = approval_selectors.approval_get(workspace=request.actor.workspace, public_id=apr)
        self.check_object_permissions(request, approval)
        return approval

    @extend_schema(
        operation_id="approval_comments_list",
        summary="A request's comments, oldest first",
        responses={200: CommentListSerializer, **COMMON_ERRORS},
    )
    def get(self, request: Request, apr: str) -> Response:
        approval = self._approval(request, apr)
        return Response({"results": [comment_as_dict(c, approval) for c in selectors.comments_of(approval)]})

    @extend_schema(
        operation_id="approval_comments_add",
        summary="Comment on a request",
        description="Reviewers and the requester (a member) comment; a comment never decides. Audited "
        "(`approval.commented`).",
        request=CommentInput,
        responses={201: CommentSerializer, 400: _error("`text` empty or over 2,000 characters."), **COMMON_ERRORS},
    )
    def post(self, request: Request, apr: str) -> Response:
        approval = self._approval(request, apr)
        body = CommentInput(data=request.data)
        body.is_valid(raise_exception=True)
        comment = services.comment_add(approval=approval, user=request.actor.user, text=body.validated_data["text"])
        return Response(comment_as_dict(comment, approval), status=201)


class ClaimSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="the request (apr_…)")
    claimed_by = serializers.CharField(allow_null=True, help_text="the claimant's email, or null")
    claimed_at = serializers.DateTimeField(allow_null=True)
    already_claimed = serializers.BooleanField(help_text="true when this reviewer had claimed it before")


class ClaimView(APIView):
    permission_classes = [MayDecide]

    def _approval(self, request: Request, apr: str):
        approval = approval_selectors.approval_get(workspace=request.actor.workspace, public_id=apr)
        self.check_object_permissions(request, approval)
        return approval

    @extend_schema(
        operation_id="approval_claim",
        summary='"I\'m on it": claim a pending request',
        description="One claimant: another reviewer's claim answers 409 `conflict` naming them. A claim never "
        "stops another reviewer deciding. Claiming it again answers 200 with `already_claimed: true`.",
        request=None,
        responses={
            200: ClaimSerializer,
            409: _error("Claimed by another reviewer, or no longer pending."),
            **COMMON_ERRORS,
        },
    )
    def post(self, request: Request, apr: str) -> Response:
        approval = self._approval(request, apr)
        claim, already = services.claim_take(approval=approval, user=request.actor.user)
        return Response({**claim_as_dict(approval, claim), "already_claimed": already})

    @extend_schema(
        operation_id="approval_unclaim",
        summary="Release the claim",
        description="By its claimant or an admin (another reviewer: 409 `conflict`). No claim: 204 as well.",
        request=None,
        responses={204: None, 409: _error("Claimed by another reviewer."), **COMMON_ERRORS},
    )
    def delete(self, request: Request, apr: str) -> Response:
        approval = self._approval(request, apr)
        services.claim_release(approval=approval, user=request.actor.user, is_admin=request.actor.is_admin)
        return Response(status=204)


class SnoozeInput(JsonInput):
    until = serializers.DateTimeField(help_text="ISO 8601 with its zone; later than now, at most 7 days ahead")


class SnoozeSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="the request (apr_…)")
    until = serializers.DateTimeField()


class SnoozeView(APIView):
    permission_classes = [MayDecide]

    @extend_schema(
        operation_id="approval_snooze",
        summary='"Not now": hide a pending request from my pending list until a time',
        description="Only the caller's queue and `status=pending` list; nothing is decided, and others still see it.",
        request=SnoozeInput,
        responses={
            200: SnoozeSerializer,
            400: _error("`until` missing, in the past, or more than 7 days ahead."),
            409: _error("No longer pending."),
            **COMMON_ERRORS,
        },
    )
    def post(self, request: Request, apr: str) -> Response:
        approval = approval_selectors.approval_get(workspace=request.actor.workspace, public_id=apr)
        self.check_object_permissions(request, approval)
        body = SnoozeInput(data=request.data)
        body.is_valid(raise_exception=True)
        snooze = services.snooze_set(approval=approval, user=request.actor.user, until=body.validated_data["until"])
        return Response({"id": approval.public_id, "until": snooze.until})


RunPageSerializer = page_serializer(ApprovalRequestSerializer(many=True), "RunPage")


class RunView(APIView):
    permission_classes = [MayDecide]

    @extend_schema(
        operation_id="run_story",
        summary="A run's story: every request of the run, oldest first",
        description=f"Gates, questions, plans and token caps, each with its decision and execution; "
        f"{selectors.RUN_PAGE_MAX:,} a page (`next`).",
        parameters=[
            OpenApiParameter(
                "cursor",
                {"type": "string", "minLength": 1, "pattern": f"^{CURSOR_PATTERN.pattern}$"},
                description="The previous page's `next_cursor`, as it is.",
            )
        ],
        responses={200: RunPageSerializer, 400: _error("A cursor this server did not write."), **COMMON_ERRORS},
    )
    def get(self, request: Request, run_id: str) -> Response:
        refuse_blank(request.query_params, {"cursor": "the previous page's next_cursor"})
        cursor = request.query_params.get("cursor", "")
        if cursor and approval_selectors.decode_cursor(cursor) is None:
            raise cursor_refused(cursor)
        rows, more = selectors.run_requests(workspace=request.actor.workspace, run_id=run_id, cursor=cursor)
        next_cursor = approval_selectors.encode_cursor(rows[-1]) if more else None
        next_url = replace_query_param(request.build_absolute_uri(), "cursor", next_cursor) if next_cursor else None
        results = approvals_read(rows, actor=request.actor)
        return Response({"run_id": run_id, "results": results, "next": next_url, "next_cursor": next_cursor})
