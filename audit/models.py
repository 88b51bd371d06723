from django.db import models

GENESIS_HASH = "0" * 64


class AuditRecord(models.Model):
    """One change of state, appended in the change's own transaction and never changed.

    `seq`, `prev_hash` and `hash` chain each record to the one before in its workspace (chain.py
    says exactly what is hashed). They are set once, moments after the change commits, by
    `audit_seal` (services.py) — the only UPDATE the database trigger lets through.
    """

    # PROTECT: a workspace with history cannot be deleted (and the trigger refuses the cascade anyway).
    workspace = models.ForeignKey("workspaces.Workspace", on_delete=models.PROTECT, related_name="+", db_index=False)
    seq = models.PositiveBigIntegerField(null=True)  # null until sealed
    at = models.DateTimeField()
    actor = models.CharField(max_length=300)
    action = models.CharField(max_length=64)
    # A public id, or what a run halt or a member change names: a run id (500, as the API allows) or an email.
    object = models.CharField(max_length=500, blank=True)
    data = models.JSONField(default=dict)
    prev_hash = models.CharField(max_length=64, null=True)
    hash = models.CharField(max_length=64, null=True)

    class Meta:
        ordering = ["workspace", "seq"]
        # Numbers the chain and serves export and verify in order.
        constraints = [models.UniqueConstraint(fields=["workspace", "seq"], name="audit_seq_unique")]
        # The records still to seal: a few moments' worth, so a small index.
        indexes = [
            models.Index(fields=["workspace", "id"], condition=models.Q(hash__isnull=True), name="audit_unsealed")
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.action} {self.object}"


class AuditHead(models.Model):
    """The end of a workspace's sealed chain: the row a sealer locks, so seq has no gaps."""

    workspace = models.OneToOneField(
        "workspaces.Workspace", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    seq = models.PositiveBigIntegerField(default=0)
    hash = models.CharField(max_length=64, default=GENESIS_HASH)
