import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q


class Plan(models.TextChoices):
    FREE = "free", "Free"
    PRO = "pro", "Pro"
    ENTERPRISE = "enterprise", "Enterprise"


class Role(models.TextChoices):
    ADMIN = "admin", "Admin"
    REVIEWER = "reviewer", "Reviewer"


class Workspace(models.Model):
    """A tenant. Every other object belongs to exactly one workspace."""

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=200)
    # Plans cannot be bought yet: only staff change this (Django admin, CLI).
    plan = models.CharField(max_length=16, choices=Plan.choices, default=Plan.FREE)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def hitl_available(self) -> bool:
        """Human-in-the-Loop is a Pro and Enterprise feature."""
        return self.plan in (Plan.PRO, Plan.ENTERPRISE)


class Membership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "workspace"], name="one_membership_per_workspace")]
        ordering = ["workspace__name"]

    def __str__(self) -> str:
        return f"{self.user} in {self.workspace} ({self.role})"

    @property
    def is_admin(self) -> bool:
        return self.role == Role.ADMIN


class TokenKind(models.TextChoices):
    USER = "user", "User token"
    ENGINE = "engine", "Engine key"


def hash_token(raw: str) -> str:
    # Tokens are 256 random bits, so one SHA-256 is enough: there is nothing to brute-force.
    return hashlib.sha256(raw.encode()).hexdigest()


# A token's hint is its prefix and this many random characters: enough to tell tokens apart, too
# few to be worth anything to whoever reads it.
HINT_RANDOM_CHARS = 6


class ApiTokenQuerySet(models.QuerySet):
    def active(self) -> "ApiTokenQuerySet":
        return self.filter(revoked_at__isnull=True)


class ApiToken(models.Model):
    """A bearer secret: a user's token or an engine key. Only its hash is stored."""

    PREFIX = "hitl_"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="tokens")
    kind = models.CharField(max_length=8, choices=TokenKind.choices)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True, help_text="The engine's name, for engine keys.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    hint = models.CharField(max_length=16, editable=False, help_text="The first characters, to recognise it.")
    created_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    objects = ApiTokenQuerySet.as_manager()

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(kind="user", user__isnull=False) | Q(kind="engine", user__isnull=True),
                name="user_token_has_user_engine_key_has_none",
            )
        ]
        ordering = ["-created_at"]

    def __str__(self) -> str:
        who = self.name if self.kind == TokenKind.ENGINE else str(self.user)
        return f"{self.get_kind_display()} {self.hint}… ({who})"

    @property
    def is_engine(self) -> bool:
        return self.kind == TokenKind.ENGINE

    @classmethod
    def generate(cls) -> str:
        return cls.PREFIX + secrets.token_urlsafe(32)
