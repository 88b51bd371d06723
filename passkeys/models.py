"""A reviewer's passkeys (WebAuthn credentials) and the one-use challenges the ceremonies sign."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.ids import PublicIdMixin


class Passkey(PublicIdMixin, models.Model):
    """One WebAuthn credential of one person. It dies with its user (CASCADE): nobody else may use it."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="passkeys")
    public_id = models.CharField(max_length=24, unique=True, editable=False)
    public_id_prefix = "psk"
    name = models.CharField(max_length=100)
    # base64url of the authenticator's credential id (at most 1,023 bytes by the WebAuthn spec).
    credential_id = models.CharField(max_length=1400, unique=True)
    public_key = models.BinaryField()  # COSE, as the authenticator gave it
    # The authenticator's signature counter: an assertion must raise it (a clone's would not).
    sign_count = models.PositiveBigIntegerField(default=0)
    transports = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"


class Purpose(models.TextChoices):
    REGISTER = "register", "Register a passkey"
    STEP_UP = "step_up", "Approve with a passkey"
    REAUTH = "reauth", "Confirm it is you"


class PasskeyChallenge(models.Model):
    """A challenge handed to the browser for one ceremony: short-lived, used once (`used_at`).

    A step-up challenge names the request and the call it was made for; its bytes carry the same
    binding (passkeys.stepup.binding), so the signed assertion itself says which call was approved.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    challenge = models.CharField(max_length=128, unique=True)  # base64url
    approval_public_id = models.CharField(max_length=24, blank=True)
    call_digest = models.CharField(max_length=64, blank=True)
    # A registration challenge is issued only to someone who proved it is them ("password" or "passkey").
    confirmed_with = models.CharField(max_length=16, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["expires_at"], name="passkey_challenge_expiry")]
        constraints = [
            models.CheckConstraint(
                condition=~Q(purpose="step_up") | ~Q(approval_public_id=""), name="step_up_challenge_names_request"
            )
        ]
