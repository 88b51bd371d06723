"""DRF permission classes: each resolves the actor once and checks one role."""

from typing import TYPE_CHECKING

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from .access import Actor, actor_for_request

if TYPE_CHECKING:  # DRF imports this module (settings) while importing its views: no import of them here
    from rest_framework.views import APIView


def actor_of(request: Request) -> Actor | None:
    """The request's actor, resolved once and kept on the request."""
    if not hasattr(request, "actor"):
        request.actor = actor_for_request(request)
    return request.actor


class IsWorkspaceActor(BasePermission):
    """Anyone with a place in a workspace: a member (any role) or an engine key."""

    message = "You are not a member of a workspace that can use this."

    def has_permission(self, request: Request, view: "APIView") -> bool:
        return actor_of(request) is not None


class IsAdmin(BasePermission):
    message = "Only a workspace admin may do this."

    def has_permission(self, request: Request, view: "APIView") -> bool:
        actor = actor_of(request)
        return actor is not None and actor.is_admin


class IsEngine(BasePermission):
    message = "Only an engine key may do this."

    def has_permission(self, request: Request, view: "APIView") -> bool:
        actor = actor_of(request)
        return actor is not None and actor.is_engine


class IsEngineOrReviewer(BasePermission):
    message = "Only an engine key, a reviewer or an admin of this workspace may do this."

    def has_permission(self, request: Request, view: "APIView") -> bool:
        actor = actor_of(request)
        return actor is not None and (actor.is_engine or actor.can_review)
