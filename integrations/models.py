from django.conf import settings
from django.db import models
from django.utils import timezone

from approvals.models import ApprovalRequest, Status


class SlackMessage(models.Model):
    """Where a request's Slack message is (channel + ts), so every resolution can update it."""

    approval = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="slack_messages")
    contact_id = models.CharField(max_length=24, blank=True)  # the frozen contact (con_…) it was sent for
    channel = models.CharField(max_length=32)
    ts = models.CharField(max_length=32)
    # What the message shows now: an update is due when the request's status or its claimant differs.
    shown_status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    shown_claim = models.CharField(max_length=254, blank=True, default="")  # the claimant's email shown, or ""
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # One card per request per channel: an escalation to the same channel replies in its thread.
            models.UniqueConstraint(fields=["approval", "channel"], name="one_slack_message_per_channel"),
        ]
        # A reply in a thread names its parent by channel and ts (integrations/slack_comments.py).
        indexes = [models.Index(fields=["channel", "ts"], name="slack_message_at")]

    def __str__(self) -> str:
        return f"{self.approval_id} in {self.channel} at {self.ts}"


class SlackRequestSeen(models.Model):
    """Signatures of Slack requests received in the last minutes: the same one twice is a replay."""

    digest = models.CharField(max_length=64, unique=True)  # SHA-256 of the X-Slack-Signature
    received_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.digest


class SlackEventSeen(models.Model):
    """Event ids of the Events API acted on lately: Slack retries an event it thinks went unanswered with the
    same event_id, and the unique index makes the second one do nothing, also when both arrive at once."""

    event_id = models.CharField(max_length=64, unique=True)
    received_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return self.event_id


class SlackThreadTold(models.Model):
    """A Slack user told once, in a request's thread, why their replies there do not become comments: their
    next replies add no second note. Goes with the message (the thread) it was told under."""

    message = models.ForeignKey(SlackMessage, on_delete=models.CASCADE, related_name="+")
    slack_user = models.CharField(max_length=32)
    told_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["message", "slack_user"], name="told_once_per_thread")]

    def __str__(self) -> str:
        return f"{self.slack_user} told under {self.message_id}"


# --- Telegram (docs/telegram.md) -------------------------------------------------------------


class TelegramMessage(models.Model):
    """Where a request's Telegram message is (chat + message id), so every resolution can edit it."""

    approval = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="telegram_messages")
    contact_id = models.CharField(max_length=24, blank=True)  # the frozen contact (con_…) it was sent for
    chat_id = models.CharField(max_length=40)
    message_id = models.BigIntegerField()
    # What the message shows now: an edit is due when the request's status or its claimant differs.
    shown_status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    shown_claim = models.CharField(max_length=254, blank=True, default="")  # the claimant's email shown, or ""
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            # One card per request per chat: an escalation to the same chat replies to it.
            models.UniqueConstraint(fields=["approval", "chat_id"], name="one_telegram_message_per_chat"),
        ]
        # A reply names the message it answers by chat and message id (a comment, integrations/telegram_inbound.py).
        indexes = [models.Index(fields=["chat_id", "message_id"], name="telegram_message_at")]

    def __str__(self) -> str:
        return f"{self.approval_id} in {self.chat_id} as {self.message_id}"


class TelegramAccount(models.Model):
    """A portal user's Telegram user, linked on their account page with a one-time code sent to the bot.

    The link is who a button press is: a Telegram user id maps to at most one portal user.
    """

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="telegram_account")
    telegram_user_id = models.BigIntegerField(unique=True)
    telegram_username = models.CharField(max_length=64, blank=True)  # shown on the account page only
    linked_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"{self.user_id} is Telegram user {self.telegram_user_id}"


class TelegramLinkCode(models.Model):
    """A one-time code a user sends the bot to link their Telegram account. Stored as its SHA-256."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    digest = models.CharField(max_length=64, unique=True)
    expires_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"link code of {self.user_id}"


class TelegramReasonPrompt(models.Model):
    """The bot's "reply with your reason" message after a Reject (or Stop the run) press.

    A reply to it (Telegram's reply_to_message) from the same Telegram user decides, with its text
    as the reason; the request and the person are checked again then.
    """

    chat_id = models.CharField(max_length=40)
    message_id = models.BigIntegerField()
    approval = models.ForeignKey(ApprovalRequest, on_delete=models.CASCADE, related_name="+")
    decision = models.CharField(max_length=16)
    telegram_user_id = models.BigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["chat_id", "message_id"], name="one_prompt_per_message")]

    def __str__(self) -> str:
        return f"reason for {self.approval_id} asked in {self.chat_id}"


class TelegramUpdateSeen(models.Model):
    """update_ids received in the last day: the same one twice is a replay (Telegram keeps an
    undelivered update at most 24 hours, so an older id cannot come back legitimately)."""

    update_id = models.BigIntegerField(unique=True)
    received_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return str(self.update_id)
