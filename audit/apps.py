from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_migrate


class AuditConfig(AppConfig):
    name = "audit"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from .checks import runtime_role_check

        checks.register(
            runtime_role_check, checks.Tags.database, deploy=True
        )  # needs the database: `check --deploy --database default`
        post_migrate.connect(_grant_runtime_role, sender=self)


def _grant_runtime_role(sender, using: str = "default", **kwargs) -> None:
    """After every migrate (every table exists by then): the runtime role gets rows, not tables."""
    from django.conf import settings
    from django.db import connections

    from .db_roles import runtime_grant

    if settings.HITL_DB_RUNTIME_ROLE:
        runtime_grant(connections[using], settings.HITL_DB_RUNTIME_ROLE)
