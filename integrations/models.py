from django.db import models
from django.utils import timezone

from approvals.models import ApprovalRequest, Status


class SlackMessage(models.Model):
    """Where a request's Slack message is (channel + ts), so every resolution can update it."""

    approval = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="slack_messages")
    contact_id = models.CharField(max_length=24, blank=True)  # the frozen contact (con_…) it was sent for
    channel = models.CharField(max_length=32)
    ts = models.CharField(max_length=32)
    # What the message shows now: an update is due when the request's status differs.
    shown_status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # One card per request per channel: an escalation to the same channel replies in its thread.
            models.UniqueConstraint(fields=["approval", "channel"], name="one_slack_message_per_channel"),
        ]

    def __str__(self) -> str:
        return f"{self.approval_id} in {self.channel} at {self.ts}"


class SlackRequestSeen(models.Model):
    """Signatures of Slack requests received in the last minutes: the same one twice is a replay."""

    digest = models.CharField(max_length=64, unique=True)  # SHA-256 of the X-Slack-Signature
    received_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.digest
