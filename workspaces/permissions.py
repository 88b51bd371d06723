"""DRF permission classes: each resolves the actor once and checks one role."""

from rest_framework.permissions import BasePermission

from .access import actor_for_request


def _actor(request):
    if not hasattr(request, "actor"):
        request.actor = actor_for_request(request)
    return request.actor


class IsWorkspaceActor(BasePermission):
    """Anyone with a place in a workspace: a member (any role) or an engine key."""

    message = "You are not a member of a workspace that can use this."

    def has_permission(self, request, view) -> bool:
        return _actor(request) is not None


class IsAdmin(BasePermission):
    message = "Only a workspace admin may do this."

    def has_permission(self, request, view) -> bool:
        actor = _actor(request)
        return actor is not None and actor.is_admin


class IsReviewer(BasePermission):
    """Reviewers and admins (a person, never an engine key)."""

    message = "Only a reviewer or an admin of this workspace may do this."

    def has_permission(self, request, view) -> bool:
        actor = _actor(request)
        return actor is not None and actor.can_review


class IsEngine(BasePermission):
    message = "Only an engine key may do this."

    def has_permission(self, request, view) -> bool:
        actor = _actor(request)
        return actor is not None and actor.is_engine


class IsEngineOrReviewer(BasePermission):
    message = "Only an engine key, a reviewer or an admin of this workspace may do this."

    def has_permission(self, request, view) -> bool:
        actor = _actor(request)
        return actor is not None and (actor.is_engine or actor.can_review)
