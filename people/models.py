"""Approver groups and delegations: who, beyond a reviewer's role, may decide what (docs/people.md)."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from common.ids import PublicIdMixin
from workspaces.models import Workspace

GROUP_NAME_MAX = 100
DELEGATION_REASON_MAX = 2000


class ApproverGroup(PublicIdMixin, models.Model):
    """A named set of a workspace's members; a rule's `approver_groups` lets only them decide."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="approver_groups")
    public_id = models.CharField(max_length=24, unique=True, editable=False)
    public_id_prefix = "grp"
    name = models.CharField(max_length=GROUP_NAME_MAX)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="group_name_unique")]

    def __str__(self) -> str:
        return self.name


class GroupMember(models.Model):
    group = models.ForeignKey(ApproverGroup, on_delete=models.CASCADE, related_name="members")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["user__email"]
        constraints = [models.UniqueConstraint(fields=["group", "user"], name="group_member_once")]

    def __str__(self) -> str:
        return f"{self.user} in {self.group}"


class DelegationQuerySet(models.QuerySet):
    def live(self, now=None) -> "DelegationQuerySet":
        return self.filter(ended_at__isnull=True, until__gt=now or timezone.now())


class Delegation(PublicIdMixin, models.Model):
    """A reviewer's stand-in until `until`: the delegate decides what the delegator could, on their behalf."""

    public_id = models.CharField(max_length=24, unique=True, editable=False)
    public_id_prefix = "dlg"
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="delegations")
    delegator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    delegate = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    reason = models.CharField(max_length=DELEGATION_REASON_MAX, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    until = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_by_email = models.CharField(max_length=254, blank=True)

    objects = DelegationQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One open delegation per person and workspace: naming a new delegate ends the old one first.
            models.UniqueConstraint(
                fields=["workspace", "delegator"], condition=Q(ended_at__isnull=True), name="one_open_delegation"
            ),
            models.CheckConstraint(condition=~Q(delegator=F("delegate")), name="delegation_not_to_self"),
        ]
        indexes = [
            models.Index(
                fields=["workspace", "delegate"], condition=Q(ended_at__isnull=True), name="dlg_open_by_delegate"
            )
        ]

    def __str__(self) -> str:
        return f"{self.delegator} → {self.delegate} until {self.until}"
