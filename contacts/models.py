import re

from django.core.exceptions import ValidationError
from django.db import models

from hitl_portal.ids import new_public_id
from rules.models import Config


class Channel(models.TextChoices):
    EMAIL = "email", "Email"
    SLACK = "slack", "Slack"
    WEBHOOK = "webhook", "Webhook"
    NONE = "none", "None"


PLACEHOLDER = re.compile(r"^\$\{[A-Z][A-Z0-9_]*\}$")
# Worded for the form and the API alike: the form shows it beside the field, the API's `fields` names it.
PLACEHOLDER_ERROR = (
    "Use a ${ENV_VAR} placeholder with an upper-case name, such as ${APPROVERS_SLACK_WEBHOOK}, "
    "never a literal address or URL: put the real value in that environment variable"
)
ARTICLED = {Channel.EMAIL: "An email", Channel.SLACK: "A Slack", Channel.WEBHOOK: "A webhook"}


def channel_ref_error(channel: str, channel_ref: str) -> str | None:
    if not channel_ref:
        if channel == Channel.NONE:
            return None
        return (
            f"{ARTICLED.get(channel, 'A')} contact needs a channel reference such as ${{APPROVERS_{channel.upper()}}}"
        )
    if not PLACEHOLDER.match(channel_ref):
        return PLACEHOLDER_ERROR
    return None


class Contact(models.Model):
    """An approver channel in a config's draft. Holds a reference to a secret, never the secret."""

    config = models.ForeignKey(Config, on_delete=models.CASCADE, related_name="contacts")
    public_id = models.CharField(max_length=24, unique=True, editable=False)
    name = models.CharField(max_length=200)
    channel = models.CharField(max_length=16, choices=Channel.choices, default=Channel.EMAIL)
    channel_ref = models.CharField("Channel reference", max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.channel})"

    def save(self, *args, **kwargs):
        if not self.public_id:
            self.public_id = new_public_id("con")
        super().save(*args, **kwargs)

    def clean(self) -> None:
        self.channel_ref = (self.channel_ref or "").strip()
        error = channel_ref_error(self.channel, self.channel_ref)
        if error:
            raise ValidationError({"channel_ref": error})

    def frozen(self) -> dict:
        return {"id": self.public_id, "name": self.name, "channel": self.channel, "channel_ref": self.channel_ref}
