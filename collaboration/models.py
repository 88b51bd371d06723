"""The people around a pending request besides its decision: comments, a claim, snoozes (docs/people.md)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from approvals.models import ApprovalRequest
from common.ids import PublicIdMixin
from workspaces.models import Workspace

COMMENT_MAX = 2000


class CommentVia(models.TextChoices):
    PAGE = "page", "the request's page"
    API = "api", "the API"
    CLI = "cli", "the CLI"
    SLACK = "slack", "Slack"
    TELEGRAM = "telegram", "Telegram"


class Comment(PublicIdMixin, models.Model):
    """A reviewer's or the requester's words on a request. Never a decision; kept as history."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    approval = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="+", db_index=False)
    public_id = models.CharField(max_length=24, editable=False)
    public_id_prefix = "cmt"
    # PROTECT: who said it is history; a person who commented is deactivated, never deleted.
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", db_index=False)
    author_email = models.CharField(max_length=254)
    text = models.CharField(max_length=COMMENT_MAX)
    via = models.CharField(max_length=16, choices=CommentVia.choices, default=CommentVia.API)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["public_id"], name="cmt_public_id_unique")]
        indexes = [models.Index(fields=["approval", "created_at", "id"], name="cmt_of_request")]

    def __str__(self) -> str:
        return self.public_id


class Claim(models.Model):
    """ "I'm on it": one reviewer working a pending request. Everyone sees it; it never stops anyone deciding."""

    # The primary key is the request: one claimant at most, decided by the database.
    approval = models.OneToOneField(ApprovalRequest, on_delete=models.CASCADE, primary_key=True, related_name="+")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    user_email = models.CharField(max_length=254)
    claimed_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.user_email} on {self.approval_id}"


class Snooze(models.Model):
    """ "Not now": a request hidden from one reviewer's queue until `until`, for them alone, undecided."""

    approval = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="+", db_index=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+", db_index=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False)
    until = models.DateTimeField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["approval", "user"], name="one_snooze_per_reviewer")]
        # The queue's "hidden from me" read: this reviewer's snoozes in this workspace still running.
        indexes = [models.Index(fields=["workspace", "user", "until"], name="snooze_of_reviewer")]

    def __str__(self) -> str:
        return f"{self.approval_id} snoozed until {self.until}"
