"""Tell every server process at once when a run grant is created (PostgreSQL NOTIFY on `hitl_grants`).

Each process keeps, per run-grant rule, when its last live grant expires (approvals/services.py:
`live_grants_until`), and only a new grant can make that wrong. A trigger, not a call in a service:
a grant written by any path counts, and the NOTIFY goes out when (and only if) it commits.
"""

from django.db import migrations

FORWARD = """
CREATE FUNCTION hitl_notify_grant() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('hitl_grants', NEW.config_id || ':' || NEW.rule_id);
    RETURN NULL;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER hitl_grant_created AFTER INSERT ON approvals_grant FOR EACH ROW EXECUTE FUNCTION hitl_notify_grant();
"""

BACKWARD = """
DROP TRIGGER IF EXISTS hitl_grant_created ON approvals_grant;
DROP FUNCTION IF EXISTS hitl_notify_grant();
"""


def _run(sql: str):
    def run(apps, schema_editor) -> None:
        if schema_editor.connection.vendor == "postgresql":  # SQLite has no NOTIFY, and no process keeps grants
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [("approvals", "0008_merge_approver_policy_and_final_requests")]

    operations = [migrations.RunPython(_run(FORWARD), _run(BACKWARD))]
