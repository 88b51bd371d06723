import re

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from common.ids import PublicIdMixin
from rules.models import Config
from rules.vocabulary import Channel

# Only HITL_* variables: nobody can point a contact at SECRET_KEY or DATABASE_URL.
PLACEHOLDER = re.compile(r"^\$\{(HITL_[A-Z0-9_]+)\}$")
# What contacts saved before the HITL_ rule may hold; they are listed with a message until edited.
LEGACY_PLACEHOLDER = re.compile(r"^\$\{([A-Z][A-Z0-9_]*)\}$")
_PLACEHOLDER_ERROR = (
    "{field} must be a ${{HITL_…}} placeholder with an upper-case name starting with HITL_, such as "
    "${{HITL_ONCALL_WEBHOOK}}, never a literal address, URL or secret: put the real value in that environment variable"
)


PLACEHOLDER_ERROR = _PLACEHOLDER_ERROR.format(field="channel_ref")
SECRET_PLACEHOLDER_ERROR = _PLACEHOLDER_ERROR.format(field="secret_ref")


def reference_name(ref: str) -> str | None:
    """The HITL_ variable a `${HITL_…}` reference names, or None."""
    found = PLACEHOLDER.match(ref or "")
    return found.group(1) if found else None


def is_legacy_reference(ref: str) -> bool:
    """A `${NAME}` saved before references had to start with HITL_: it resolves to nothing until edited."""
    return bool(ref) and not PLACEHOLDER.match(ref) and bool(LEGACY_PLACEHOLDER.match(ref))


# Channels that name no address: `push` reaches every browser the workspace's reviewers subscribed.
NO_ADDRESS = (Channel.NONE, Channel.PUSH)


def channel_ref_error(channel: str, channel_ref: str) -> str | None:
    if channel == Channel.PUSH and channel_ref:
        return (
            "A Web Push contact takes no channel reference: it notifies every browser the workspace's reviewers "
            "subscribed on their account page; leave channel_ref empty"
        )
    if not channel_ref:
        if channel in NO_ADDRESS:
            return None
        article = {
            Channel.EMAIL: "An email",
            Channel.SLACK: "A Slack",
            Channel.WEBHOOK: "A webhook",
            Channel.TELEGRAM: "A Telegram",
        }.get(channel, "A")
        return f"{article} contact needs a channel reference such as ${{HITL_APPROVERS_{channel.upper()}}}"
    if not PLACEHOLDER.match(channel_ref):
        return PLACEHOLDER_ERROR
    return None


def secret_ref_error(channel: str, secret_ref: str) -> str | None:
    if not secret_ref:
        if channel == Channel.WEBHOOK:
            return (
                "A webhook contact needs secret_ref, the ${HITL_…} variable holding its whsec_… signing secret, "
                "such as ${HITL_ONCALL_WEBHOOK_SECRET}"
            )
        return None
    if not PLACEHOLDER.match(secret_ref):
        return SECRET_PLACEHOLDER_ERROR
    return None


class Contact(PublicIdMixin, models.Model):
    """An approver channel in a config's draft. Holds a reference to a secret, never the secret."""

    config = models.ForeignKey(Config, on_delete=models.CASCADE, related_name="contacts")
    public_id = models.CharField(max_length=24, unique=True, editable=False)
    public_id_prefix = "con"
    name = models.CharField(max_length=200)
    channel = models.CharField(max_length=16, choices=Channel.choices, default=Channel.EMAIL)
    channel_ref = models.CharField("Channel reference", max_length=200, blank=True)
    # Webhook: the variable holding the whsec_… signing secret. A reference, never the secret.
    secret_ref = models.CharField("Secret reference", max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.channel})"

    def clean(self) -> None:
        self.channel_ref = (self.channel_ref or "").strip()
        self.secret_ref = (self.secret_ref or "").strip()
        errors = {}
        if error := channel_ref_error(self.channel, self.channel_ref):
            errors["channel_ref"] = error
        if error := secret_ref_error(self.channel, self.secret_ref):
            errors["secret_ref"] = error
        if errors:
            raise ValidationError(errors)

    @property
    def is_legacy(self) -> bool:
        return is_legacy_reference(self.channel_ref) or is_legacy_reference(self.secret_ref)

    def frozen(self) -> dict:
        return {
            "id": self.public_id,
            "name": self.name,
            "channel": self.channel,
            "channel_ref": self.channel_ref,
            "secret_ref": self.secret_ref,
        }


class ReferenceGrant(models.Model):
    """A variable the host lets one workspace's contacts name beyond its own `HITL_<SLUG>_…`
    (`hitl refs grant`, contacts/refs.py)."""

    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="reference_grants")
    name = models.CharField(max_length=200)
    granted_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="reference_granted_once")]

    def __str__(self) -> str:
        return self.name


class DeliveryEvent(models.TextChoices):
    REQUESTED = "requested", "Requested"
    REMINDER = "reminder", "Reminder"
    ESCALATED = "escalated", "Escalated"
    DECIDED = "decided", "Decided"
    EXPIRED = "expired", "Expired"
    TEST = "test", "Test"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"
    # Not sent, and never will be: its request was decided (or expired) before its turn came.
    SKIPPED = "skipped", "Skipped"


# Sent only while the request still waits: a request decided meanwhile sends neither.
WHILE_PENDING = (DeliveryEvent.REMINDER, DeliveryEvent.ESCALATED)


class Delivery(PublicIdMixin, models.Model):
    """One message to one contact about one event: the transactional outbox (contacts.outbox).

    Written in the same transaction as the event; sent by the django-q2 cluster. The contact is
    copied as the request's frozen version names it, so a later draft edit never redirects it.
    """

    public_id = models.CharField(max_length=24, editable=False)
    public_id_prefix = "dlv"
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+", db_index=False)
    # Null for a `test` event, which belongs to no request. No index of its own: one_delivery_per_event
    # starts with it and serves every lookup by request (EXPLAIN in docs/performance.md).
    approval = models.ForeignKey(
        "approvals.ApprovalRequest",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="deliveries",
        db_index=False,
    )
    contact_public_id = models.CharField(max_length=24)
    recipient = models.JSONField(default=dict)  # the frozen contact: name, channel, channel_ref, secret_ref
    event = models.CharField(max_length=16, choices=DeliveryEvent.choices)
    channel = models.CharField(max_length=16, choices=Channel.choices)
    status = models.CharField(max_length=8, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    # When a pending row is next due. Claiming moves it a lease ahead, so a row whose worker died
    # mid-send comes due again by itself.
    next_attempt_at = models.DateTimeField()
    digest = models.BooleanField(default=False)  # held back by the fatigue rule, sent in one digest
    # A one-click link rides on this delivery: set when it is used, so it works once.
    link_used_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["public_id"], name="dlv_public_id_unique"),
            # At most one delivery per (request, contact, event); tests (no request) may repeat.
            models.UniqueConstraint(
                fields=["approval", "contact_public_id", "event"],
                condition=Q(approval__isnull=False),
                name="one_delivery_per_event",
            ),
        ]
        indexes = [
            models.Index(fields=["next_attempt_at"], condition=Q(status="pending"), name="dlv_due"),
            # Fair claiming (contacts/claiming.py): the (workspace, channel) groups with pending rows by a
            # skip scan, then each group's due rows in order.
            models.Index(
                fields=["workspace", "channel", "next_attempt_at"], condition=Q(status="pending"), name="dlv_due_fair"
            ),
            models.Index(fields=["workspace", "-created_at", "-id"], name="dlv_log"),
            models.Index(fields=["contact_public_id", "-created_at"], name="dlv_contact"),
        ]

    def __str__(self) -> str:
        return self.public_id
