from django.db import models

from workspaces.models import Workspace

GENESIS_HASH = "0" * 64


class AuditRecord(models.Model):
    """One change of state, appended once and never changed (database triggers refuse it).

    `hash` chains each record to the one before in its workspace: see chain.py for exactly
    what is hashed.
    """

    # PROTECT: a workspace with history cannot be deleted (and the trigger refuses the cascade anyway).
    workspace = models.ForeignKey(Workspace, on_delete=models.PROTECT, related_name="+", db_index=False)
    seq = models.PositiveBigIntegerField()
    at = models.DateTimeField()
    actor = models.CharField(max_length=300)
    action = models.CharField(max_length=64)
    object = models.CharField(max_length=64, blank=True)
    data = models.JSONField(default=dict)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64)

    class Meta:
        ordering = ["workspace", "seq"]
        # The one index: it numbers the chain and serves export and verify in order.
        constraints = [models.UniqueConstraint(fields=["workspace", "seq"], name="audit_seq_unique")]

    def __str__(self) -> str:
        return f"#{self.seq} {self.action} {self.object}"


class AuditHead(models.Model):
    """The end of a workspace's chain: the row every append locks, so seq has no gaps.

    Appending updates it in the same statement or transaction as the record, so a rolled-back
    change rolls its seq back too. `prev_hash` is the head's hash before the last append: an
    UPDATE's RETURNING sees only new values, and the new record needs the old hash.
    """

    workspace = models.OneToOneField(Workspace, on_delete=models.CASCADE, primary_key=True, related_name="+")
    seq = models.PositiveBigIntegerField(default=0)
    hash = models.CharField(max_length=64, default=GENESIS_HASH)
    prev_hash = models.CharField(max_length=64, default=GENESIS_HASH)
