"""Who is asking, in which workspace, with which role: one answer for pages, API and CLI."""

from dataclasses import dataclass

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest
from rest_framework.request import Request

from .models import ApiToken, Membership, Role, Workspace


@dataclass(frozen=True)
class Actor:
    workspace: Workspace
    user: object | None = None  # a Django user, for people
    role: str | None = None  # admin / reviewer, for people
    engine_key: ApiToken | None = None  # for engines

    @property
    def is_engine(self) -> bool:
        return self.engine_key is not None

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN

    @property
    def can_review(self) -> bool:
        """Admins may do everything a reviewer does."""
        return self.role in (Role.ADMIN, Role.REVIEWER)

    @property
    def label(self) -> str:
        if self.engine_key is not None:
            return f"engine {self.engine_key.name}"
        return getattr(self.user, "email", "") or str(self.user)


def memberships_of(user: AbstractBaseUser | AnonymousUser) -> list[Membership]:
    if not getattr(user, "is_authenticated", False) or not getattr(user, "is_active", False):
        return []
    # Read for every request: who a person is and what they may do is never kept by a process.
    memberships = list(Membership.objects.filter(user=user).select_related("workspace").order_by("workspace__name"))
    for membership in memberships:
        membership.user = user  # the request's own user: not read again for every actor
    return memberships


def current_membership(request: HttpRequest) -> Membership | None:
    """The membership for the workspace this browser session works in (cached on the request)."""
    if not hasattr(request, "hitl_membership"):
        memberships = memberships_of(request.user)
        chosen = request.session.get("workspace_id") if memberships else None
        membership = next((m for m in memberships if m.workspace_id == chosen), None)
        request.hitl_memberships = memberships
        request.hitl_membership = membership or (memberships[0] if memberships else None)
    return request.hitl_membership


def actor_for_request(request: Request) -> Actor | None:
    """The actor behind a DRF request: a bearer token (user or engine) or a browser session."""
    token = getattr(request, "auth", None)
    if isinstance(token, ApiToken):
        return actor_for_token(token)
    membership = current_membership(request)
    if membership is None:
        return None
    return Actor(workspace=membership.workspace, user=membership.user, role=membership.role)


def actor_for_token(token: ApiToken) -> Actor | None:
    """The actor behind a live token (an engine key, or a person's token while they are a member)."""
    if token.is_engine:
        return Actor(workspace=token.workspace, engine_key=token)
    membership = Membership.objects.filter(user_id=token.user_id, workspace_id=token.workspace_id).only("role").first()
    if membership is None or not token.user.is_active:  # removed or deactivated: the token is worth nothing
        return None
    return Actor(workspace=token.workspace, user=token.user, role=membership.role)


def actor_for_membership(membership: Membership) -> Actor:
    return Actor(workspace=membership.workspace, user=membership.user, role=membership.role)


def actor_for_user(*, user: AbstractBaseUser, workspace: Workspace) -> Actor | None:
    """A person acting in a workspace outside a request (the CLI); None if not an active member."""
    membership = Membership.objects.filter(user=user, workspace=workspace).only("role").first()
    if membership is None or not user.is_active:
        return None
    return Actor(workspace=workspace, user=user, role=membership.role)
