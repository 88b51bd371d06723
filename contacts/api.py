"""Admin REST API for a config's draft contacts (docs/api.md). Admins only; other workspaces answer 404."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from common.errors import ErrorSerializer
from rules.api import BAD_INPUT, ERRORS, PAGE_PARAMS, AdminPagination, AdminView
from rules.selectors import config_for
from rules.serializers import ContactPage, ContactSerializer

from . import services
from .models import Contact
from .selectors import contact_for, contacts_of
from .serializers import ContactCreateSerializer, ContactInputSerializer

TAG = ["configs"]


class ContactPagination(AdminPagination):
    ordering = ("name", "id")


def _contact(request: Request, cfg: str, con: str) -> Contact:
    return contact_for(config=config_for(workspace=request.actor.workspace, public_id=cfg), public_id=con)


class ContactListView(AdminView):
    @extend_schema(
        tags=TAG,
        summary="The draft's contacts",
        operation_id="configs_contacts_list",
        parameters=PAGE_PARAMS,
        responses={200: ContactPage, **ERRORS},
    )
    def get(self, request: Request, cfg: str) -> Response:
        paginator = ContactPagination()
        page = paginator.paginate_queryset(
            contacts_of(config_for(workspace=request.actor.workspace, public_id=cfg)), request, self
        )
        return paginator.get_paginated_response(ContactSerializer([c.frozen() for c in page], many=True).data)

    @extend_schema(
        tags=TAG,
        summary="Add a contact",
        request=ContactCreateSerializer,
        responses={201: ContactSerializer, **BAD_INPUT, **ERRORS},
    )
    def post(self, request: Request, cfg: str) -> Response:
        config = config_for(workspace=request.actor.workspace, public_id=cfg)
        data = ContactCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        contact = services.contact_create(config=config, user=request.actor.user, **data.validated_data)
        return Response(ContactSerializer(contact.frozen()).data, status=status.HTTP_201_CREATED)


class ContactDetailView(AdminView):
    @extend_schema(tags=TAG, summary="One draft contact", responses={200: ContactSerializer, **ERRORS})
    def get(self, request: Request, cfg: str, con: str) -> Response:
        return Response(ContactSerializer(_contact(request, cfg, con).frozen()).data)

    @extend_schema(
        tags=TAG,
        summary="Edit a draft contact",
        request=ContactInputSerializer,
        responses={200: ContactSerializer, **BAD_INPUT, **ERRORS},
    )
    def patch(self, request: Request, cfg: str, con: str) -> Response:
        contact = _contact(request, cfg, con)
        data = ContactInputSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        contact = services.contact_update(contact=contact, user=request.actor.user, **data.validated_data)
        return Response(ContactSerializer(contact.frozen()).data)

    @extend_schema(
        tags=TAG,
        summary="Delete a draft contact",
        responses={
            204: None,
            **ERRORS,
            409: OpenApiResponse(
                ErrorSerializer, description="`conflict`: a draft rule names the contact; the message names the rules."
            ),
        },
    )
    def delete(self, request: Request, cfg: str, con: str) -> Response:
        services.contact_delete(contact=_contact(request, cfg, con), user=request.actor.user)
        return Response(status=status.HTTP_204_NO_CONTENT)
