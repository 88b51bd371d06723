"""Tell every server process when who a browser session is may have changed (NOTIFY on `hitl_signins`).

Each process keeps sessions, their users and the users' memberships (workspaces/signed_in.py) and
empties that cache on this NOTIFY. Triggers, not calls in services: a session ended by logout or
by `clearsessions`, a password changed in the admin, a member removed by the CLI or by hand in psql
all reach the cache, and only when (and if) the change commits. Per statement: `clearsessions`
deleting ten thousand rows is one NOTIFY. An INSERT matters only for memberships (the cache holds
a user's whole list); a new session or user is not in any cache yet.
"""

from django.conf import settings
from django.db import migrations

TABLES = (
    ("django_session", "UPDATE OR DELETE"),
    ("{user_table}", "UPDATE OR DELETE"),
    ("workspaces_membership", "INSERT OR UPDATE OR DELETE"),
    ("workspaces_workspace", "UPDATE OR DELETE"),
)

FORWARD = """
CREATE FUNCTION hitl_notify_signins() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('hitl_signins', TG_TABLE_NAME);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
""" + "".join(
    f"CREATE TRIGGER hitl_signins_changed AFTER {events} ON {table} FOR EACH STATEMENT"
    " EXECUTE FUNCTION hitl_notify_signins();\n"
    for table, events in TABLES
)

BACKWARD = (
    "".join(f"DROP TRIGGER IF EXISTS hitl_signins_changed ON {table};\n" for table, _ in TABLES)
    + "DROP FUNCTION IF EXISTS hitl_notify_signins();\n"
)


def _run(sql: str):
    def run(apps, schema_editor) -> None:
        user_table = apps.get_model(settings.AUTH_USER_MODEL)._meta.db_table
        schema_editor.execute(sql.format(user_table=schema_editor.quote_name(user_table)))

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0002_notify_token_revoked"),
        ("sessions", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
