"""A TRUNCATE of a table the wait hub listens to is heard too (docs/hub.md).

Row triggers (0002, approvals 0009 and 0010) say when a key is revoked, a user deactivated, a member
removed, a workspace changed, a grant made or a halt made or lifted; TRUNCATE fires no row trigger,
so each of those tables gets a statement-level one sending `truncate:<table>` on the same channel.
"""

from django.conf import settings
from django.db import migrations

TABLES = (
    ("workspaces_apitoken", "hitl_tokens"),
    ("{user_table}", "hitl_tokens"),
    ("workspaces_membership", "hitl_tokens"),
    ("workspaces_workspace", "hitl_tokens"),
    ("approvals_grant", "hitl_grants"),
    ("approvals_halt", "hitl_halts"),
)

FORWARD = """
CREATE FUNCTION hitl_notify_truncate() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify(TG_ARGV[0], 'truncate:' || TG_TABLE_NAME);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
""" + "".join(
    f"CREATE TRIGGER hitl_truncated AFTER TRUNCATE ON {table} FOR EACH STATEMENT"
    f" EXECUTE FUNCTION hitl_notify_truncate('{channel}');\n"
    for table, channel in TABLES
)

BACKWARD = (
    "".join(f"DROP TRIGGER IF EXISTS hitl_truncated ON {table};\n" for table, _ in TABLES)
    + "DROP FUNCTION IF EXISTS hitl_notify_truncate();\n"
)


def _run(sql: str):
    def run(apps, schema_editor) -> None:
        user_table = apps.get_model(settings.AUTH_USER_MODEL)._meta.db_table
        schema_editor.execute(sql.format(user_table=schema_editor.quote_name(user_table)))

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0004_drop_signins_triggers"),
        ("approvals", "0015_merge_halts"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
