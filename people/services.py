"""Writes of approver groups and delegations: keyword-only, atomic, each audited in its transaction."""

from datetime import datetime, timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.utils import timezone

from audit.services import actor_of, audit_append
from people.exceptions import GroupNameTaken, NotFoundIn, PeopleInvalid
from people.models import DELEGATION_REASON_MAX, GROUP_NAME_MAX, ApproverGroup, Delegation, GroupMember
from workspaces.models import Workspace

DELEGATION_MAX = timedelta(days=30)


def member_of(*, workspace: Workspace, email: str, field: str) -> AbstractBaseUser:
    """The active member of `workspace` with this email; 400 naming `field` for anyone else."""
    email = (email or "").strip()
    user = (
        get_user_model().objects.filter(email__iexact=email, is_active=True, memberships__workspace=workspace).first()
    )
    if user is None:
        raise PeopleInvalid(field, f"{email or 'nobody'} is not a member of this workspace: name one of its members.")
    return user


@transaction.atomic
def group_create(*, workspace: Workspace, name: str, user: AbstractBaseUser | None = None) -> ApproverGroup:
    name = (name or "").strip()
    if not name or len(name) > GROUP_NAME_MAX:
        raise PeopleInvalid("name", f"A group needs a name of 1–{GROUP_NAME_MAX} characters.")
    try:
        with transaction.atomic():
            group = ApproverGroup.objects.create(workspace=workspace, name=name)
    except IntegrityError:
        raise GroupNameTaken(f"This workspace already has a group named {name!r}: pick another name.") from None
    audit_append(
        workspace_id=workspace.pk,
        actor=actor_of(user=user),
        action="group.created",
        object=group.public_id,
        data={"name": name},
    )
    return group


@transaction.atomic
def group_member_add(*, group: ApproverGroup, email: str, user: AbstractBaseUser | None = None) -> GroupMember:
    """Add a member of the group's workspace (anyone else: 400 naming `email`); adding twice changes nothing."""
    member = member_of(workspace=group.workspace, email=email, field="email")
    membership, created = GroupMember.objects.get_or_create(group=group, user=member)
    if created:
        audit_append(
            workspace_id=group.workspace_id,
            actor=actor_of(user=user),
            action="group.member_added",
            object=group.public_id,
            data={"email": member.email},
        )
    return membership


@transaction.atomic
def group_member_remove(*, group: ApproverGroup, email: str, user: AbstractBaseUser | None = None) -> None:
    removed, _ = GroupMember.objects.filter(group=group, user__email__iexact=(email or "").strip()).delete()
    if not removed:
        raise NotFoundIn("email", f"{email} is not in the group {group.name}.")
    audit_append(
        workspace_id=group.workspace_id,
        actor=actor_of(user=user),
        action="group.member_removed",
        object=group.public_id,
        data={"email": email.strip().lower()},
    )


@transaction.atomic
def delegation_start(
    *,
    workspace: Workspace,
    delegator: AbstractBaseUser,
    delegate_email: str,
    until: datetime,
    reason: str = "",
    now: datetime | None = None,
) -> Delegation:
    """Name a stand-in until `until` (in the future, at most 30 days away); replaces the person's open one."""
    now = now or timezone.now()
    delegate = member_of(workspace=workspace, email=delegate_email, field="delegate")
    if delegate.pk == delegator.pk:
        raise PeopleInvalid("delegate", "Name someone else: you cannot stand in for yourself.")
    if until <= now:
        raise PeopleInvalid("until", "until is in the past: give an end time in the future.")
    if until > now + DELEGATION_MAX:
        raise PeopleInvalid("until", "until is more than 30 days away: a delegation lasts at most 30 days.")
    if len(reason or "") > DELEGATION_REASON_MAX:
        raise PeopleInvalid("reason", f"Keep the reason to {DELEGATION_REASON_MAX:,} characters.")
    # The open one is locked and ended first; the partial unique constraint refuses a second open one.
    for open_one in Delegation.objects.select_for_update().filter(
        workspace=workspace, delegator=delegator, ended_at__isnull=True
    ):
        _end(open_one, user=delegator, now=now)
    delegation = Delegation.objects.create(
        workspace=workspace, delegator=delegator, delegate=delegate, until=until, reason=reason or "", created_at=now
    )
    audit_append(
        workspace_id=workspace.pk,
        actor=actor_of(user=delegator),
        action="delegation.started",
        object=delegator.email,
        data={"delegate": delegate.email, "until": until.isoformat(), "reason": reason or ""},
        at=now,
    )
    return delegation


@transaction.atomic
def delegation_end(*, delegation: Delegation, user: AbstractBaseUser | None, now: datetime | None = None) -> bool:
    """End a delegation now (its delegator, or an admin); ending an ended one changes nothing (False)."""
    locked = Delegation.objects.select_for_update().get(pk=delegation.pk)
    if locked.ended_at is not None:
        return False
    _end(locked, user=user, now=now or timezone.now())
    delegation.refresh_from_db()
    return True


def _end(delegation: Delegation, *, user: AbstractBaseUser | None, now: datetime) -> None:
    delegation.ended_at = now
    delegation.ended_by_email = getattr(user, "email", "") or ""
    delegation.save(update_fields=["ended_at", "ended_by_email"])
    audit_append(
        workspace_id=delegation.workspace_id,
        actor=actor_of(user=user),
        action="delegation.ended",
        object=delegation.delegator.email,
        data={"delegate": delegation.delegate.email},
        at=now,
    )
