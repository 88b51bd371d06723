"""Who may decide a request: one answer for the page, the API, the CLI (and links, Slack)."""

from django.contrib.auth.base_user import AbstractBaseUser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from approvals.models import ApprovalKind, ApprovalRequest
from rules.versions import rule_approver_groups
from workspaces.access import Actor
from workspaces.permissions import actor_of

DECIDERS_ONLY = "Only a reviewer or an admin of this workspace may decide."


def may_decide(actor: Actor | None, approval: ApprovalRequest | None = None) -> bool:
    """A reviewer or admin (a person, never an engine key) of the request's workspace.

    Without `approval`: may this actor decide requests of its workspace at all (checked before a
    request is loaded, so a refusal does not depend on whether the id exists).
    """
    if actor is None or actor.user is None or not actor.can_review:
        return False
    return approval is None or approval.workspace_id == actor.workspace.pk


def refuses_self_approval(*, approval: ApprovalRequest, user: AbstractBaseUser | None = None, email: str = "") -> bool:
    """Four eyes: the person a run acts for (requested_by) may not approve it, unless its rule allows it.

    Rejecting stays allowed. The one check behind the decide service (API, tab, CLI), the card's
    hidden Approve button and "who may still approve".
    """
    if approval.self_approval or not approval.requested_by:
        return False
    email = email or getattr(user, "email", "") or ""
    return email.casefold() == approval.requested_by.casefold()


def approver_groups_of(approval: ApprovalRequest) -> list[str]:
    """The approver groups (grp_…) the request's frozen rule names; empty: every reviewer may decide it."""
    if approval.kind != ApprovalKind.GATE:
        return []
    return rule_approver_groups(config_pk=approval.config_id, number=approval.config_version, rule_id=approval.rule_id)


class MayDecide(BasePermission):
    """`may_decide` for DRF: before the request is loaded, and on it (`check_object_permissions`)."""

    message = DECIDERS_ONLY

    def has_permission(self, request: Request, view: APIView) -> bool:
        return may_decide(actor_of(request))

    def has_object_permission(self, request: Request, view: APIView, obj: ApprovalRequest) -> bool:
        return may_decide(actor_of(request), obj)
