"""Sessions, users and memberships are read per request again (Django's database sessions and
ModelBackend): nothing listens on `hitl_signins`, so its triggers (0003) go."""

from django.conf import settings
from django.db import migrations

TABLES = ("django_session", "{user_table}", "workspaces_membership", "workspaces_workspace")

FORWARD = (
    "".join(f"DROP TRIGGER IF EXISTS hitl_signins_changed ON {table};\n" for table in TABLES)
    + "DROP FUNCTION IF EXISTS hitl_notify_signins();\n"
)


def drop(apps, schema_editor) -> None:
    user_table = apps.get_model(settings.AUTH_USER_MODEL)._meta.db_table
    schema_editor.execute(FORWARD.format(user_table=schema_editor.quote_name(user_table)))


class Migration(migrations.Migration):
    dependencies = [("workspaces", "0003_notify_signins")]

    # Backwards: nothing to restore, no process listens for them.
    operations = [migrations.RunPython(drop, migrations.RunPython.noop)]
