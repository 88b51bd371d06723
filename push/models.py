from django.conf import settings
from django.db import models

from common.ids import PublicIdMixin


class PushSubscription(PublicIdMixin, models.Model):
    """One browser a reviewer subscribed to Web Push from their account page, for one workspace.

    What the browser's PushManager gave: the push service's endpoint and the keys its messages are
    encrypted to (RFC 8291). The keys are the browser's public key and auth secret: they let us
    write to that browser, nothing more. Dies with its user; dropped when the push service answers
    404/410 (the browser unsubscribed or the subscription expired).
    """

    public_id = models.CharField(max_length=24, unique=True, editable=False)
    public_id_prefix = "psb"
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="push_subscriptions")
    endpoint = models.URLField(max_length=2000)
    p256dh = models.CharField(max_length=200)  # the browser's P-256 public key, base64url
    auth = models.CharField(max_length=100)  # the browser's 16-byte auth secret, base64url
    user_agent = models.CharField(max_length=300, blank=True)  # so a person can tell their browsers apart
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # A browser subscribed again (a new key pair, the same endpoint) replaces its row.
            models.UniqueConstraint(fields=["workspace", "endpoint"], name="one_push_subscription_per_endpoint")
        ]

    def __str__(self) -> str:
        return self.public_id

    def info(self) -> dict:
        """As pywebpush takes it: the PushSubscription's JSON."""
        return {"endpoint": self.endpoint, "keys": {"p256dh": self.p256dh, "auth": self.auth}}
