"""Admin REST API for configs, draft rules, publish, versions and pin (docs/api.md). Admins only.

Each view is thin: an input serializer validates, a service writes, an output serializer renders.
The workspace scoping is in `_config`: another workspace's config answers 404 like a missing one.
"""

from django.http import Http404
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from common.errors import ErrorSerializer
from common.pagination import PAGE_PARAMETERS, CursorPagination
from workspaces.permissions import IsAdmin

from . import selectors, services
from .models import Config, ConfigVersion, ProposalStatus, Rule
from .proposals import proposal_as_dict, proposal_for, proposal_resolve
from .serializers import (
    ConfigCreateSerializer,
    ConfigPage,
    ConfigSerializer,
    ConfigUpdateSerializer,
    PinSerializer,
    PublishSerializer,
    RuleInputSerializer,
    RulePage,
    RuleSerializer,
    SimulateSerializer,
    SimulationSerializer,
    VersionPage,
    VersionSerializer,
)
from .simulate import config_simulate

TAG = ["configs"]
ERRORS = {
    401: OpenApiResponse(ErrorSerializer, description="No token, or an unknown or revoked one."),
    403: OpenApiResponse(ErrorSerializer, description="Not an admin of this workspace."),
    404: OpenApiResponse(ErrorSerializer, description="No such config in this workspace."),
}
PAGE_PARAMS = PAGE_PARAMETERS
BAD_INPUT = {400: OpenApiResponse(ErrorSerializer, description="Bad JSON or a field's value; `fields` names it.")}


class AdminPagination(CursorPagination):
    """The admin endpoints' pages (cursor checks live in CursorPagination, for every list)."""


class ConfigPagination(AdminPagination):
    ordering = "-created_at"


class RulePagination(AdminPagination):
    ordering = ("order", "id")


class VersionPagination(AdminPagination):
    ordering = "-number"


def _config(request: Request, cfg: str) -> Config:
    return selectors.config_for(workspace=request.actor.workspace, public_id=cfg)


def _rule(request: Request, cfg: str, rul: str) -> Rule:
    return selectors.rule_for(config=_config(request, cfg), public_id=rul)


def _version_response(version: ConfigVersion, served_number: int | None, code: int = 200) -> Response:
    return Response(VersionSerializer(version, context={"served_number": served_number}).data, status=code)


class AdminView(APIView):
    permission_classes = [IsAdmin]


class ConfigListView(AdminView):
    @extend_schema(
        tags=TAG,
        summary="List configs",
        operation_id="configs_list",
        parameters=PAGE_PARAMS,
        responses={200: ConfigPage, **ERRORS},
    )
    def get(self, request: Request) -> Response:
        paginator = ConfigPagination()
        page = paginator.paginate_queryset(selectors.configs_with_versions(request.actor.workspace), request, self)
        return paginator.get_paginated_response(ConfigSerializer(page, many=True).data)

    @extend_schema(
        tags=TAG,
        summary="Create a config",
        request=ConfigCreateSerializer,
        responses={201: ConfigSerializer, **BAD_INPUT, **ERRORS},
    )
    def post(self, request: Request) -> Response:
        data = ConfigCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        config = services.config_create(
            workspace=request.actor.workspace, user=request.actor.user, **data.validated_data
        )
        return Response(
            ConfigSerializer(_config(request, config.public_id)).data,
            status=status.HTTP_201_CREATED,
        )


class ConfigDetailView(AdminView):
    @extend_schema(tags=TAG, summary="Read a config's draft settings", responses={200: ConfigSerializer, **ERRORS})
    def get(self, request: Request, cfg: str) -> Response:
        return Response(ConfigSerializer(_config(request, cfg)).data)

    @extend_schema(
        tags=TAG,
        summary="Edit the draft's settings",
        request=ConfigUpdateSerializer,
        responses={200: ConfigSerializer, **BAD_INPUT, **ERRORS},
    )
    def patch(self, request: Request, cfg: str) -> Response:
        config = _config(request, cfg)
        data = ConfigUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        services.config_update(config=config, user=request.actor.user, **data.changes())
        return Response(ConfigSerializer(_config(request, cfg)).data)


class RuleListView(AdminView):
    @extend_schema(
        tags=TAG,
        summary="The draft's rules, in order",
        operation_id="configs_rules_list",
        parameters=PAGE_PARAMS,
        responses={200: RulePage, **ERRORS},
    )
    def get(self, request: Request, cfg: str) -> Response:
        paginator = RulePagination()
        page = paginator.paginate_queryset(
            Rule.objects.filter(config=_config(request, cfg)),
            request,
            self,
        )
        return paginator.get_paginated_response(RuleSerializer([rule.frozen() for rule in page], many=True).data)

    @extend_schema(
        tags=TAG,
        summary="Add a rule (an empty body adds “approve every delete”)",
        request=RuleInputSerializer,
        responses={201: RuleSerializer, **BAD_INPUT, **ERRORS},
    )
    def post(self, request: Request, cfg: str) -> Response:
        config = _config(request, cfg)
        data = RuleInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        rule = services.rule_create(config=config, user=request.actor.user, **data.fields_for_create())
        return Response(RuleSerializer(rule.frozen()).data, status=status.HTTP_201_CREATED)


class RuleDetailView(AdminView):
    @extend_schema(tags=TAG, summary="One draft rule", responses={200: RuleSerializer, **ERRORS})
    def get(self, request: Request, cfg: str, rul: str) -> Response:
        return Response(RuleSerializer(_rule(request, cfg, rul).frozen()).data)

    @extend_schema(
        tags=TAG,
        summary="Edit a draft rule",
        request=RuleInputSerializer,
        responses={200: RuleSerializer, **BAD_INPUT, **ERRORS},
    )
    def patch(self, request: Request, cfg: str, rul: str) -> Response:
        rule = _rule(request, cfg, rul)
        data = RuleInputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        rule = services.rule_update(rule=rule, user=request.actor.user, **data.validated_data)
        return Response(RuleSerializer(rule.frozen()).data)

    @extend_schema(tags=TAG, summary="Delete a draft rule", responses={204: None, **ERRORS})
    def delete(self, request: Request, cfg: str, rul: str) -> Response:
        services.rule_delete(rule=_rule(request, cfg, rul), user=request.actor.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PublishView(AdminView):
    @extend_schema(
        tags=TAG,
        summary="Freeze the draft into version N+1 and serve it (releases any pin)",
        request=PublishSerializer,
        responses={
            201: VersionSerializer,
            **BAD_INPUT,
            **ERRORS,
            403: OpenApiResponse(
                ErrorSerializer,
                description="Not an admin, or `plan_required`: an enabled rule in the draft on the Free plan.",
            ),
            409: OpenApiResponse(
                ErrorSerializer, description="`conflict`: the draft matches the newest version; nothing to publish."
            ),
        },
    )
    def post(self, request: Request, cfg: str) -> Response:
        config = _config(request, cfg)
        data = PublishSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        version = services.config_publish(config=config, user=request.actor.user, note=data.validated_data["note"])
        version = ConfigVersion.objects.select_related("config", "published_by").get(pk=version.pk)
        return _version_response(version, version.number, status.HTTP_201_CREATED)


class VersionListView(AdminView):
    @extend_schema(
        tags=TAG,
        summary="Published versions, newest first",
        operation_id="configs_versions_list",
        parameters=PAGE_PARAMS,
        responses={200: VersionPage, **ERRORS},
    )
    def get(self, request: Request, cfg: str) -> Response:
        config = _config(request, cfg)
        paginator = VersionPagination()
        versions = ConfigVersion.objects.filter(config=config).select_related("config", "published_by")
        page = paginator.paginate_queryset(versions, request, self)
        data = VersionSerializer(page, many=True, context={"served_number": config.served_number}).data
        return paginator.get_paginated_response(data)


class VersionDetailView(AdminView):
    @extend_schema(tags=TAG, summary="One frozen version", responses={200: VersionSerializer, **ERRORS})
    def get(self, request: Request, cfg: str, number: int) -> Response:
        config = _config(request, cfg)
        version = config.versions.select_related("config", "published_by").filter(number=number).first()
        if version is None:
            raise Http404
        return _version_response(version, config.served_number)


class PinView(AdminView):
    @extend_schema(
        tags=TAG,
        summary="Serve this version until the next publish (roll back = pin an older one)",
        request=PinSerializer,
        responses={
            200: VersionSerializer,
            **BAD_INPUT,
            **ERRORS,
            404: OpenApiResponse(ErrorSerializer, description="No such config, or no such version of it."),
        },
    )
    def post(self, request: Request, cfg: str) -> Response:
        config = _config(request, cfg)
        data = PinSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            version = services.config_pin(
                config=config, version=data.validated_data["version"], user=request.actor.user
            )
        except ConfigVersion.DoesNotExist:
            raise Http404 from None
        version = ConfigVersion.objects.select_related("config", "published_by").get(pk=version.pk)
        return _version_response(version, version.number)


class SimulateView(AdminView):
    @extend_schema(
        tags=TAG,
        summary="Dry run of the draft against the last N days",
        operation_id="configs_simulate",
        description=(
            "The draft's rules held against the requests stored and the shadow and condition counts of the last "
            "`days` days (today included, UTC): per rule, how many it would still ask about, no longer ask about, "
            "and newly ask about. Changes nothing; read only."
        ),
        request=SimulateSerializer,
        responses={200: SimulationSerializer, **BAD_INPUT, **ERRORS},
    )
    def post(self, request: Request, cfg: str) -> Response:
        config = _config(request, cfg)
        data = SimulateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(config_simulate(config=config, days=data.validated_data["days"]))


class ProposalSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="prp_…")
    rule_id = serializers.CharField()
    condition = serializers.CharField()
    condition_before = serializers.CharField(allow_blank=True)
    approval_id = serializers.CharField()
    proposed_by = serializers.EmailField()
    created_at = serializers.DateTimeField()
    status = serializers.ChoiceField(choices=ProposalStatus.values)
    resolved_by = serializers.EmailField(allow_null=True)
    resolved_at = serializers.DateTimeField(allow_null=True)


class ProposalListView(AdminView):
    @extend_schema(
        tags=TAG,
        summary="Conditions proposed by reviewers with approve always (open ones first)",
        operation_id="configs_proposals_list",
        responses={200: ProposalSerializer(many=True), **ERRORS},
    )
    def get(self, request: Request, cfg: str) -> Response:
        config = _config(request, cfg)
        proposals = config.proposals.select_related("rule").order_by("status", "-created_at")[:200]
        return Response([proposal_as_dict(proposal) for proposal in proposals])


class ProposalResolveView(AdminView):
    @extend_schema(
        tags=TAG,
        summary="Accept a proposal into the draft, or dismiss it",
        operation_id="configs_proposals_resolve",
        description="`accept` sets the draft rule's condition to the proposal's (publish to make it live); "
        "`dismiss` drops it. A resolved proposal stays as it was.",
        request=None,
        responses={200: ProposalSerializer, **ERRORS},
    )
    def post(self, request: Request, cfg: str, prp: str, action: str) -> Response:
        proposal = proposal_for(config=_config(request, cfg), public_id=prp)
        proposal = proposal_resolve(proposal=proposal, user=request.actor.user, accept=action == "accept")
        return Response(proposal_as_dict(proposal))
