"""Reviewer endpoints (docs/api.md, Reviewers): list requests and decide."""

from django.utils import timezone
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils.urls import replace_query_param
from rest_framework.views import APIView

from approvals import extensions
from approvals.grants.services import GRANT_TTL_DEFAULT, GRANT_TTL_MAX, GRANT_TTL_MIN
from approvals.models import ApprovalKind, ApprovalRequest, Status
from approvals.presenters.api import AnswersField, ApprovalRequestSerializer, approval_as_dict, approvals_read
from approvals.questions.validate import QUESTION_WORDS
from approvals.review import selectors
from approvals.review.always import always_check, always_record
from approvals.review.decide import DECISIONS, REASON_MAX, approval_decide
from approvals.review.permissions import MayDecide
from common.errors import ErrorSerializer
from common.fields import JsonInput
from common.pagination import PAGE_PARAMETERS, CursorPagination, cursor_refused, page_serializer
from common.query import QuerySerializer
from rules.conditions import CONDITION_MAX
from rules.vocabulary import RuleKind

KIND_FILTERS = [*ApprovalKind.values, *RuleKind.values]


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


class ListFilters(QuerySerializer):
    status = serializers.ChoiceField(choices=Status.values, required=False)
    config = serializers.RegexField(
        r"^cfg_[A-Za-z0-9]+$",
        required=False,
        help_text="a config id (cfg_…)",
        error_messages={"invalid": "config must be a config id (cfg_…)."},
    )
    kind = serializers.ChoiceField(choices=KIND_FILTERS, required=False)
    requested_by = serializers.ChoiceField(choices=["me"], required=False)


ApprovalPageSerializer = page_serializer(ApprovalRequestSerializer(many=True), "ApprovalPage")


class ApprovalPagination(CursorPagination):
    """Only its `limit` handling (default 50, at most 200): the keyset is selectors.history_page's."""

    page_size = 50


LIST_PARAMETERS = [
    OpenApiParameter(
        "status",
        str,
        enum=Status.values,
        description="pending (not yet overdue) lists oldest first; the others newest first. "
        "expired includes overdue requests no sweep has marked yet.",
    ),
    OpenApiParameter("config", str, pattern=r"^cfg_[A-Za-z0-9]+$", description="a config id (cfg_…)"),
    *PAGE_PARAMETERS,
    OpenApiParameter(
        "kind",
        str,
        enum=KIND_FILTERS,
        description="gate or token_cap; or a rule kind (delete, mcp_server, cell, worker) for gates at that boundary",
    ),
    OpenApiParameter(
        "requested_by",
        str,
        enum=["me"],
        description="me: only the requests made for the caller (their email is the request's requested_by); "
        "people's tokens only",
    ),
]
LIST_SCHEMA = extend_schema(
    operation_id="approvals_list",
    summary="List approval requests",
    description="Requests of the caller's workspace (engine keys, reviewers and admins).",
    parameters=LIST_PARAMETERS,
    responses={
        200: ApprovalPageSerializer,
        400: _error("A filter value is not one of the allowed ones; `fields` names it."),
        401: _error("No or an unknown bearer token."),
        403: _error("Not a member or engine of a workspace."),
    },
)


def list_approvals(request: Request) -> Response:
    """GET /api/v1/approvals (the collection view's GET; its POST registers): the History page's query."""
    filters = ListFilters(data=request.query_params)
    filters.is_valid(raise_exception=True)
    wanted = filters.validated_data
    cursor = request.query_params.get("cursor", "")
    if cursor and selectors.decode_cursor(cursor) is None:
        raise cursor_refused(cursor)
    actor = request.actor
    requested_by = ""
    if wanted.get("requested_by") == "me":
        if actor.user is None:
            # An engine key is nobody's "me": not a bad value, a caller it does not apply to.
            raise PermissionDenied("requested_by=me needs a person's token, not an engine key.")
        requested_by = actor.user.email
    now = timezone.now()
    rows, next_cursor = selectors.history_page(
        workspace=request.actor.workspace,
        filters=selectors.HistoryFilters(
            status=wanted.get("status", ""),
            config=wanted.get("config", ""),
            kind=wanted.get("kind", ""),
            include_pending=True,
            requested_by=requested_by,
            hidden=tuple(extensions.queue_hidden(actor)) if actor.user is not None else (),
        ),
        cursor=cursor,
        now=now,
        page_size=ApprovalPagination().get_page_size(request),
    )
    next_url = replace_query_param(request.build_absolute_uri(), "cursor", next_cursor) if next_cursor else None
    results = approvals_read(selectors.with_votes(rows), actor=actor, now=now)
    return Response({"results": results, "next": next_url, "next_cursor": next_cursor})


class DecisionInput(JsonInput):
    decision = serializers.ChoiceField(
        choices=list(dict.fromkeys([*DECISIONS, *QUESTION_WORDS])),
        help_text="approve / reject a gate request; proceed (past cap) / stop (the run) a token cap request; "
        "answer / decline a question; approve / revise a plan",
    )
    answers = AnswersField(
        required=False,
        allow_null=True,  # as the schema says (nullable): null is no answers, as leaving the field out is
        help_text="with answer: question id → value (an option's value, a list for multi, words, a number, a boolean)",
    )
    # Its limit is the decide service's (REASON_MAX), as for every door: said in the error envelope.
    reason = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text=f"passed back to the agent; at most {REASON_MAX:,} characters",
    )
    grant = serializers.ChoiceField(
        choices=["run"],
        required=False,
        help_text="with approve: approve the rest of this run (same config, rule and run id) while the grant lives",
    )
    grant_ttl_seconds = serializers.IntegerField(
        min_value=GRANT_TTL_MIN,
        max_value=GRANT_TTL_MAX,
        required=False,
        help_text=f"how long the run grant lives ({GRANT_TTL_MIN}–{GRANT_TTL_MAX}; default {GRANT_TTL_DEFAULT})",
    )

    propose_condition = serializers.CharField(
        required=False,
        max_length=CONDITION_MAX,
        trim_whitespace=False,
        help_text='with approve: "approve always" — propose this condition (false for this call) to the rule\'s '
        "draft, for an admin to accept and publish; never live on its own",
    )
    arguments = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text="with approve, on a rule with allow_edit: the arguments to run instead of the proposal, "
        "checked against the request's arguments_schema (a failing path is named: arguments.amount_cents)",
    )

    def validate(self, data: dict) -> dict:
        if "grant_ttl_seconds" in data and "grant" not in data:
            raise serializers.ValidationError({"grant_ttl_seconds": ['grant_ttl_seconds goes with "grant": "run".']})
        return data

    def grant_ttl(self) -> int | None:
        if "grant" not in self.validated_data:
            return None
        return self.validated_data.get("grant_ttl_seconds", GRANT_TTL_DEFAULT)


class DecisionOutput(ApprovalRequestSerializer):
    """The approval request as returned everywhere, plus whether it had been decided before."""

    already_decided = serializers.BooleanField(
        help_text="true when the request was decided or expired before: the body is that first decision"
    )
    already_voted = serializers.BooleanField(
        help_text="true when this reviewer had already approved this still pending quorum request: nothing changed"
    )
    proposal_id = serializers.CharField(
        required=False,
        allow_null=True,
        help_text="with propose_condition: the proposal (prp_…) put in the draft for an admin, null if the approval "
        "did not count (already decided)",
    )

    def to_representation(self, instance: ApprovalRequest) -> dict:
        return instance


class DecisionView(APIView):
    permission_classes = [MayDecide]

    @extend_schema(
        operation_id="approvals_decide",
        summary="Decide an approval request",
        description="Recorded once: deciding an already decided or expired request answers 200 with the "
        "first decision unchanged and `already_decided: true`. Engine keys may not decide. On a quorum request "
        "(`approvals_required` N > 1) `approve` records a vote and the N-th decides; approving twice answers "
        "`already_voted: true`. Four eyes: the request's `requested_by` may not approve unless the rule allows "
        "self-approval (403 `self_approval`). `grant: run` approves the rest of the run (rules with "
        "`allow_run_grant` only). Step-up: approving under a rule with `require_passkey` is done on the request's "
        "page with a passkey; here it answers 403 `passkey_required` with `error.url`, the page. Rejecting needs none. "
        "`arguments` approves other arguments than proposed (rules with `allow_edit` "
        "only): the request keeps its proposal, `decision.arguments` / `decision.call_digest` / `decision.edited` "
        "say what was approved. "
        "A question is answered (`answers`, each checked against its question: 400 naming "
        "`answers.<id>`) or declined, a plan approved or sent back (`revise`, reason required), once, by whoever is "
        "first; quorum and four eyes do not apply.",
        request=DecisionInput,
        responses={
            200: DecisionOutput,
            400: _error(
                "Bad JSON, an unknown decision, the wrong pair for the request's kind, a reason over 2000, or "
                "`arguments` where the rule does not allow edits or that fail the request's arguments_schema "
                "(`fields` names each failing path, such as `arguments.amount_cents`)."
            ),
            401: _error("No or an unknown bearer token."),
            403: _error(
                "An engine key, not a reviewer or admin of the workspace, or `self_approval`: the run acts for "
                "this reviewer and the rule wants another one to approve, or `passkey_required`: the rule wants "
                "a passkey, on the request's page (`error.url`)."
            ),
            404: _error("No such request in this workspace."),
            409: _error("`conflict`: approving or answering a request that a halt or a freeze in force covers."),
        },
    )
    def post(self, request: Request, apr: str) -> Response:
        approval = selectors.approval_get(workspace=request.actor.workspace, public_id=apr)
        self.check_object_permissions(request, approval)
        body = DecisionInput(data=request.data)
        body.is_valid(raise_exception=True)
        proposed = body.validated_data.get("propose_condition")
        if proposed is not None:
            rule = always_check(approval=approval, decision=body.validated_data["decision"], condition=proposed)
        approval, already = approval_decide(
            approval=approval,
            user=request.actor.user,
            decision=body.validated_data["decision"],
            reason=body.validated_data["reason"],
            grant_ttl_seconds=body.grant_ttl(),
            arguments=body.validated_data.get("arguments"),
            edit="arguments" in body.validated_data,
            answers=body.validated_data.get("answers"),
        )
        pending = approval.is_pending()  # overdue is not pending, though the sweep may not have stored it yet
        answer = {
            **approval_as_dict(approval),
            "already_decided": already and not pending,
            "already_voted": already and pending,
        }
        if proposed is not None:
            proposal = always_record(
                approval=approval, rule=rule, condition=proposed, user=request.actor.user, already=already
            )
            answer["proposal_id"] = proposal.public_id if proposal else None
        return Response(answer)
