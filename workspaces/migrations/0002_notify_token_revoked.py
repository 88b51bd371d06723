"""Tell long-polls at once when their token stops being worth anything (PostgreSQL NOTIFY on `hitl_tokens`).

A trigger, not a call in a service: a key revoked in the admin, by the CLI, by a service or by hand in
psql all end its waits, and the NOTIFY goes out when (and only if) the change commits.
Payloads: `token:<id>` (revoked or deleted), `user:<id>` (deactivated, or removed from a workspace),
`workspace:<id>` (changed, e.g. its plan: the per-process engine key cache holds the workspace).
"""

from django.conf import settings
from django.db import migrations

FORWARD = """
CREATE FUNCTION hitl_notify_token() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('hitl_tokens', 'token:' || OLD.id);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER hitl_token_revoked AFTER UPDATE OF revoked_at ON workspaces_apitoken FOR EACH ROW
    WHEN (OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL) EXECUTE FUNCTION hitl_notify_token();
CREATE TRIGGER hitl_token_deleted AFTER DELETE ON workspaces_apitoken FOR EACH ROW
    EXECUTE FUNCTION hitl_notify_token();

CREATE FUNCTION hitl_notify_user() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('hitl_tokens', 'user:' || OLD.id);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER hitl_user_deactivated AFTER UPDATE OF is_active ON {user_table} FOR EACH ROW
    WHEN (OLD.is_active AND NOT NEW.is_active) EXECUTE FUNCTION hitl_notify_user();

CREATE FUNCTION hitl_notify_member() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('hitl_tokens', 'user:' || OLD.user_id);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER hitl_membership_removed AFTER DELETE ON workspaces_membership FOR EACH ROW
    EXECUTE FUNCTION hitl_notify_member();

CREATE FUNCTION hitl_notify_workspace() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('hitl_tokens', 'workspace:' || OLD.id);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER hitl_workspace_changed AFTER UPDATE OR DELETE ON workspaces_workspace FOR EACH ROW
    EXECUTE FUNCTION hitl_notify_workspace();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS hitl_workspace_changed ON workspaces_workspace;
DROP FUNCTION IF EXISTS hitl_notify_workspace();
DROP TRIGGER IF EXISTS hitl_membership_removed ON workspaces_membership;
DROP FUNCTION IF EXISTS hitl_notify_member();
DROP TRIGGER IF EXISTS hitl_user_deactivated ON {user_table};
DROP FUNCTION IF EXISTS hitl_notify_user();
DROP TRIGGER IF EXISTS hitl_token_deleted ON workspaces_apitoken;
DROP TRIGGER IF EXISTS hitl_token_revoked ON workspaces_apitoken;
DROP FUNCTION IF EXISTS hitl_notify_token();
"""


def _run(sql: str):
    def run(apps, schema_editor) -> None:
        user_table = apps.get_model(settings.AUTH_USER_MODEL)._meta.db_table
        schema_editor.execute(sql.format(user_table=schema_editor.quote_name(user_table)))

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("workspaces", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
