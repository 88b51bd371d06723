"""Reads of groups and delegations, scoped by workspace in the queryset (one place for page, API, CLI)."""

from datetime import datetime

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.utils import timezone

from people.exceptions import GroupNotFound
from people.models import ApproverGroup, Delegation, GroupMember
from workspaces.models import Workspace


def groups_for(workspace: Workspace):
    return ApproverGroup.objects.filter(workspace=workspace).prefetch_related("members__user")


def group_get(*, workspace: Workspace, public_id: str) -> ApproverGroup:
    group = groups_for(workspace).filter(public_id=public_id).first()
    if group is None:
        raise GroupNotFound(public_id)
    return group


def group_names(*, workspace_id: int, ids: list[str]) -> list[str]:
    """The names of the groups `ids` names, in its order (an id no longer there reads as itself)."""
    names = dict(
        ApproverGroup.objects.filter(workspace_id=workspace_id, public_id__in=ids).values_list("public_id", "name")
    )
    return [names.get(public_id, public_id) for public_id in ids]


def unknown_groups(*, workspace_id: int, ids: list[str]) -> list[str]:
    known = set(
        ApproverGroup.objects.filter(workspace_id=workspace_id, public_id__in=ids).values_list("public_id", flat=True)
    )
    return [public_id for public_id in ids if public_id not in known]


def group_member_ids(*, workspace_id: int, ids: list[str]) -> set[int]:
    """The users in any of the groups `ids` names who are still members of the workspace."""
    return set(
        GroupMember.objects.filter(
            group__workspace_id=workspace_id,
            group__public_id__in=ids,
            user__is_active=True,
            user__memberships__workspace_id=workspace_id,
        ).values_list("user_id", flat=True)
    )


def group_member_emails(*, workspace_id: int, ids: list[str]) -> list[str]:
    users = get_user_model().objects.filter(pk__in=group_member_ids(workspace_id=workspace_id, ids=ids))
    return sorted(users.values_list("email", flat=True))


def delegation_of(*, workspace: Workspace, user: AbstractBaseUser, now: datetime | None = None) -> Delegation | None:
    """The person's own live delegation (whom they named, until when), if any."""
    return (
        Delegation.objects.live(now)
        .filter(workspace=workspace, delegator=user)
        .select_related("delegator", "delegate")
        .first()
    )


def delegations_for(*, workspace: Workspace, live: bool | None = None):
    delegations = Delegation.objects.filter(workspace=workspace).select_related("delegator", "delegate")
    if live is True:
        delegations = delegations.live()
    return delegations


def delegators_of(*, workspace_id: int, user_id: int | None, now: datetime | None = None) -> list[tuple[int, str]]:
    """Whom `user_id` stands in for right now: (user id, email) of each delegator still a member, by email."""
    if user_id is None:
        return []
    return list(
        Delegation.objects.live(now or timezone.now())
        .filter(
            workspace_id=workspace_id,
            delegate_id=user_id,
            delegator__is_active=True,
            delegator__memberships__workspace_id=workspace_id,
        )
        .order_by("delegator__email")
        .values_list("delegator_id", "delegator__email")
    )


def delegate_ids_for(*, workspace_id: int, delegator_ids: set[int], now: datetime | None = None) -> set[int]:
    """Who stands in for any of `delegator_ids` right now, still a member of the workspace."""
    if not delegator_ids:
        return set()
    return set(
        Delegation.objects.live(now or timezone.now())
        .filter(
            workspace_id=workspace_id,
            delegator_id__in=delegator_ids,
            delegate__is_active=True,
            delegate__memberships__workspace_id=workspace_id,
        )
        .values_list("delegate_id", flat=True)
    )


def delegate_emails_for(*, workspace_id: int, emails: list[str], now: datetime | None = None) -> list[str]:
    """Who stands in for any of `emails` right now (their notifications go to the delegates too)."""
    if not emails:
        return []
    return sorted(
        set(
            Delegation.objects.live(now or timezone.now())
            .filter(workspace_id=workspace_id, delegator__email__in=emails, delegate__is_active=True)
            .values_list("delegate__email", flat=True)
        )
    )
