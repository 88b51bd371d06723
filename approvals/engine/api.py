"""Engine endpoints (docs/api.md, Engines): served config, registration, long-poll read, outcome.

Thin: a serializer validates, a service decides, `approval_as_dict` renders.
"""

import hashlib
import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiParameter,
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
)
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.engine.outcome import approval_report_outcome, record_in_doubt_outcome
from approvals.engine.policy import SHADOW, allowed_notice
from approvals.engine.register import INERT_NOTICE, Sent, register
from approvals.engine.serializers import (
    AllowedSerializer,
    GateRegistrationSerializer,
    InertSerializer,
    KindSerializer,
    OutcomeReportedSerializer,
    OutcomeSerializer,
    PlanRegistrationSerializer,
    QuestionRegistrationSerializer,
    ServedConfigSerializer,
    TokenCapRegistrationSerializer,
    WaitQuerySerializer,
)
from approvals.expiry.expire import approval_expire_if_overdue
from approvals.models import ApprovalKind, ApprovalRequest, Status
from approvals.presenters.api import ApprovalRequestSerializer, approval_as_dict, approval_read
from approvals.review import selectors
from common.errors import ErrorSerializer
from rules.models import Config
from rules.selectors import LOG_LINES, hitl_state, served_version
from rules.serializers import ServedGateSerializer
from workspaces.access import Actor
from workspaces.permissions import IsEngine, IsEngineOrReviewer

REGISTRATION_SERIALIZERS = {
    ApprovalKind.GATE: GateRegistrationSerializer,
    ApprovalKind.TOKEN_CAP: TokenCapRegistrationSerializer,
    ApprovalKind.QUESTION: QuestionRegistrationSerializer,
    ApprovalKind.PLAN: PlanRegistrationSerializer,
}
IDEMPOTENCY_KEY_MAX = 255


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorSerializer, description=description)


AUTH_ERRORS = {
    401: _error("No token, or an unknown or revoked one."),
    403: _error("The token may not do this (for example a user token where an engine key is needed)."),
}

IDEMPOTENCY_KEY_PARAMETER = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "minLength": 1, "maxLength": IDEMPOTENCY_KEY_MAX},
    OpenApiParameter.HEADER,
    required=False,
    description=(
        "Up to 255 characters. The same key from the same engine key answers 200 with the request it first "
        "created (also when two calls race); the same key with a different body answers 422 "
        "`idempotency_key_reused`."
    ),
)
WAIT_PARAMETER = OpenApiParameter(
    "wait",
    {"type": "number", "minimum": 0, "maximum": 30},
    OpenApiParameter.QUERY,
    required=False,
    description=(
        "Long-poll: answer as soon as the request is decided or expires, else after this many seconds (0–30) "
        "with it still pending. A revoked key's (or a deactivated user's token's) waits end at once with 401."
    ),
)


RETRY_AFTER_HEADER = OpenApiParameter(
    "Retry-After",
    OpenApiTypes.INT,
    OpenApiParameter.HEADER,
    response=[429],
    description="Seconds to wait before retrying.",
)


def _get_approval(request, public_id: str) -> ApprovalRequest:
    return selectors.approval_get(workspace=request.actor.workspace, public_id=public_id)


def _validated_registration(body) -> dict:
    """The body's validated data; the serializers name whatever is wrong with it."""
    kind = body.get("kind") if isinstance(body, dict) else None
    serializer_class = REGISTRATION_SERIALIZERS.get(kind) if isinstance(kind, str) else None
    if serializer_class is None:  # no kind, or not one of ours: KindSerializer says what is wrong with it
        kind_serializer = KindSerializer(data=body)
        kind_serializer.is_valid(raise_exception=True)
        serializer_class = REGISTRATION_SERIALIZERS[kind_serializer.validated_data["kind"]]
    serializer = serializer_class(data=body)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _fingerprint(body) -> str:
    """The body's canonical JSON: key order and whitespace do not make a body "different"."""
    # ensure_ascii: the digest of any text, whatever it holds, in one encoding.
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


def idempotency_key_of(header: str | None) -> str:
    """The Idempotency-Key header's value, "" without one; refused (400) when blank or too long."""
    if header is None:
        return ""
    if not header.strip():
        raise ValidationError({"Idempotency-Key": "Idempotency-Key must not be empty; leave the header out instead."})
    if len(header) > IDEMPOTENCY_KEY_MAX:
        raise ValidationError(
            {"Idempotency-Key": f"Idempotency-Key is at most {IDEMPOTENCY_KEY_MAX} characters; it has {len(header)}."}
        )
    return header


registration_schema_description = (
    "A gated call (`kind: gate`), a token cap breach (`kind: token_cap`), questions for a person "
    "(`kind: question`) or a plan to approve (`kind: plan`), checked against the frozen version named by "
    "`config_id` + `config_version`. Boundary, point and message come from the frozen rule, never from the "
    "engine. `arguments` needs pass information level `full`; `summary` needs `summary` or `full`. "
    "`ttl_seconds` may shorten the 24-hour lifetime; a longer one is refused (400), not clamped. "
    "`requested_by` is the email of the person the run acts for (four eyes).\n\n"
    "Every answer is one `RegistrationAnswer`, told apart by `status`: 201 with the request (pending, or already "
    "approved by a live grant or window, or already rejected by a halt); 200 with the request first created for "
    "a replayed Idempotency-Key; 200 `{status: inert, notice}` when HITL is inert (nothing stored; a token cap is "
    "inert on the Free plan only); 200 `{status: allowed, notice, shadow}` when the rule's condition is false "
    "for this call or the rule is a shadow rule (nothing stored, the call may proceed).\n\n"
    "Refused with a 400 for reasons the body's schema cannot state (they depend on the served version or on two "
    "fields together): a token cap breach whose `tokens_used` is below its `token_cap`; a `rule_id` that is not an "
    "enabled gate of that version; `arguments` or `summary` above the version's pass information level; "
    "`scope: turn` under a stop cap.\n\n"
    "A question (`kind: question`, 1–8 `questions`) or a plan (`kind: plan`, Markdown `plan`) may be asked whatever "
    "rule gates the run; what is wrong with a question is named by its path (`questions.0.options`). Inert, it "
    "stores nothing and answers 200 `{status: inert, notice}`: nobody can answer, go on with your best assumption."
)


def _registration_schema():
    """The body is one of two shapes, told apart by `kind`; a 200 is a replay or the inert answer."""
    body = PolymorphicProxySerializer(
        component_name="ApprovalRegistration",
        serializers={kind.value: serializer for kind, serializer in REGISTRATION_SERIALIZERS.items()},
        resource_type_field_name="kind",
    )
    # Told apart by `status`: the request carries its own status, the inert answer `inert`, the allowed one
    # `allowed`. The 201 and the 200 are the same union, so a generated client's answer type is one union
    # (ApprovalRequest | Allowed | Inert) and its errors, each shape named once.
    answer = PolymorphicProxySerializer(
        component_name="RegistrationAnswer",
        serializers={
            **{status: ApprovalRequestSerializer for status in Status.values},
            "inert": InertSerializer,
            "allowed": AllowedSerializer,
        },
        resource_type_field_name="status",
    )
    return extend_schema(
        operation_id="approvals_register",
        summary="Register an approval request (engines)",
        description=registration_schema_description,
        parameters=[IDEMPOTENCY_KEY_PARAMETER],
        request=body,
        responses={
            201: OpenApiResponse(
                answer,
                description="Created: the request (pending; or already approved by a live grant or rule window, or "
                "already rejected by a halt).",
            ),
            200: OpenApiResponse(
                answer,
                description=(
                    "An idempotent replay (the request first created), or `status: inert`: HITL is inert, nothing "
                    "was stored, the call may proceed; or `status: allowed`: the rule's condition is false for this "
                    "call, or the rule is a shadow rule (`shadow: true`) — nothing was stored, the call may proceed."
                ),
                examples=[
                    OpenApiExample("inert", value={"status": "inert", "notice": INERT_NOTICE}, response_only=True)
                ],
            ),
            400: _error("Bad JSON, a wrong type, an unknown kind, a field over its limit, or a level refusal."),
            **AUTH_ERRORS,
            404: _error("No such config, or no such version of it, in this workspace."),
            413: _error("The body is over 256 KiB."),
            422: _error("`idempotency_key_reused`: the Idempotency-Key was used with another body."),
        },
        tags=["engines"],
    )


registration_schema = _registration_schema()


def register_approval(request: Request) -> Response:
    """`POST /api/v1/approvals` (called by ApprovalCollectionView.post)."""
    status, answer = registration_answer(
        actor=request.actor, idempotency_header=request.headers.get("Idempotency-Key"), body=request.data
    )
    return Response(answer, status=status)


def registration_answer(*, actor: Actor | None, idempotency_header: str | None, body) -> tuple[int, dict]:
    """Register a parsed body for `actor` and say what to answer: (status, body); refusals raise.

    The one registration the DRF view above and the edge (edge/calls.py) both make.
    """
    if actor is None or not actor.is_engine:
        raise PermissionDenied("Only an engine key may register approval requests.")
    idempotency_key = idempotency_key_of(idempotency_header)
    registration = register(
        workspace=actor.workspace,
        engine_key=actor.engine_key,
        sent=Sent(**_validated_registration(body)),  # the serializer's fields are what an engine sent
        idempotency_key=idempotency_key,
        fingerprint=_fingerprint(body) if idempotency_key else "",
    )
    if registration.allowed:
        shadow = registration.allowed == SHADOW
        return 200, {
            "status": "allowed",
            "notice": allowed_notice(registration.rule_id, shadow=shadow),
            "shadow": shadow,
        }
    if registration.approval is None:
        return 200, {"status": "inert", "notice": registration.notice}
    return (201 if registration.created else 200), approval_as_dict(registration.approval)


def wait_of(query_params) -> float:
    """The `wait` a poll asks for, 0 without one; refused (400) unless a number from 0 to 30."""
    if not query_params:  # a plain poll (most of them) has nothing to validate
        return 0.0
    query = WaitQuerySerializer(data=query_params)
    query.is_valid(raise_exception=True)
    return float(query.validated_data.get("wait") or 0)


def approval_poll(*, actor: Actor | None, public_id: str) -> ApprovalRequest:
    """What a poll answers: the request in the actor's workspace, an overdue one expired now; refusals raise."""
    if actor is None or not (actor.is_engine or actor.can_review):
        raise PermissionDenied(IsEngineOrReviewer.message)
    approval = selectors.approval_get(workspace=actor.workspace, public_id=public_id)
    if approval.is_overdue():
        approval = approval_expire_if_overdue(approval=approval)
    return approval


class ServedConfigView(APIView):
    """`GET /api/v1/configs/{cfg}/served`: the gate table the engine applies, and its HITL log line."""

    permission_classes = [IsEngine]

    @extend_schema(
        operation_id="configs_served",
        summary="The served version's gate table (engines)",
        description=(
            "`hitl.state` is `active` only on a Pro or Enterprise plan with at least one enabled rule in the served "
            "version; the plan is read now, so a downgrade makes it inert at once. `gates` are the enabled rules in "
            "order."
        ),
        responses={
            200: ServedConfigSerializer,
            **AUTH_ERRORS,
            404: _error("No such config in this workspace, or it has no published version yet."),
        },
        tags=["engines"],
    )
    def get(self, request: Request, cfg: str) -> Response:
        workspace = request.actor.workspace
        config = Config.objects.filter(workspace=workspace, public_id=cfg).first()
        if config is None:
            raise NotFound(f"No config {cfg} in this workspace.")
        version = served_version(config)
        if version is None:
            raise NotFound(f"Config {cfg} has no published version: publish it first.")
        state = hitl_state(workspace=workspace, version=version)
        gates = sorted(version.enabled_rules, key=lambda rule: rule["order"])  # stable: ties keep draft order
        return Response(
            {
                "config_id": config.public_id,
                "version": version.number,
                "hitl": {"state": state, "log_line": LOG_LINES[state]},
                "gates": ServedGateSerializer(gates, many=True).data,  # the API's field order, not jsonb's
                "token_caps": version.token_caps,
                "pass_information_level": version.pass_information_level,
                "questions": state == "active",
            }
        )


class ApprovalDetailView(APIView):
    """`GET /api/v1/approvals/{apr}?wait=S`: engines poll it; reviewers and admins may read it too."""

    permission_classes = [IsEngineOrReviewer]

    @extend_schema(
        operation_id="approvals_read",
        summary="Read a request; long-poll for its decision with ?wait=S",
        description=(
            "An overdue request reads as expired even if no worker has swept it. With `wait`, the answer comes as "
            "soon as the request is decided or expires, else after `wait` seconds with it still pending."
        ),
        parameters=[WAIT_PARAMETER, RETRY_AFTER_HEADER],
        responses={
            200: ApprovalRequestSerializer,
            400: _error("`wait` is not a number from 0 to 30."),
            **AUTH_ERRORS,
            404: _error("No such request in this workspace."),
            429: OpenApiResponse(
                ErrorSerializer,
                description=(
                    "`too_many_waits`: this key already holds HITL_MAX_WAITS_PER_KEY (default 1,000) waits on the "
                    "server process; `Retry-After` says when to try again."
                ),
            ),
        },
        tags=["engines"],
    )
    def get(self, request: Request, apr: str) -> Response:
        # The wait itself is the edge's (edge/calls.py: the one wait path, under the ASGI server). Here,
        # where a browser session or the test client asks, a valid `wait` is a plain poll.
        wait_of(request.query_params)
        return Response(approval_read(approval_poll(actor=request.actor, public_id=apr), actor=request.actor))


class ApprovalOutcomeView(APIView):
    """`POST /api/v1/approvals/{apr}/outcome`: what happened to the approved call."""

    permission_classes = [IsEngineOrReviewer]

    @extend_schema(
        operation_id="approvals_outcome",
        summary="Report the outcome of an approved call (engines), or record an in-doubt one (reviewers)",
        description=(
            "Engines: `started` just before the approved call runs, then `executed` or `failed`. Each is recorded "
            "once, like a decision: a second `started` (or a second final outcome) answers 200 with the request "
            "unchanged and `already_reported: true` — an engine that gets that for its `started` must not run "
            "the call. `execution.status: started` without a final outcome is *in doubt*. Only an approved "
            "request takes an outcome (409 otherwise). Reviewers (a user token): `executed` or `failed` with "
            "`detail` on an in-doubt request only (409 otherwise), audited as theirs."
        ),
        request=OutcomeSerializer,
        responses={
            200: OpenApiResponse(
                OutcomeReportedSerializer,
                description="The request with its `execution`, and whether it had already been reported.",
            ),
            400: _error(
                "Bad JSON, an unknown status, a field over its limit, or a reviewer's outcome without "
                "`detail` or with `started`."
            ),
            **AUTH_ERRORS,
            404: _error("No such request in this workspace, or one registered by another engine key."),
            409: _error(
                "`conflict`: the request is not approved (pending, rejected or expired), or (a reviewer) not in doubt."
            ),
        },
        tags=["engines"],
    )
    def post(self, request: Request, apr: str) -> Response:
        serializer = OutcomeSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        approval = _get_approval(request, apr)
        if not request.actor.is_engine:
            data = serializer.validated_data
            approval = record_in_doubt_outcome(
                approval=approval, user=request.actor.user, status=data["status"], detail=data.get("detail", "")
            )
            return Response({**approval_as_dict(approval), "already_reported": False})
        if approval.engine_key_id != request.auth.pk:
            # Only the engine that registered the call ran it: another key's report would be a guess,
            # and a first report stands. Answered like a missing id, so keys cannot probe each other.
            raise NotFound(f"No approval request {apr} registered by this engine key.")
        approval, already = approval_report_outcome(approval=approval, **serializer.validated_data)
        return Response({**approval_as_dict(approval), "already_reported": already})
