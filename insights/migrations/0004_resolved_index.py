"""apr_resolved: the requests decided or expired, by workspace and decided_at — what the insights rollups read.

An index on the approvals table, created here because only the insights page reads it. Partial:
a registration (a pending row) never writes it; a decision or the sweep, which already rewrite
every index of the row (status is in apr_queue, so the update is never HOT), write one entry more.
It lets a roll-up, and the page's live part, read exactly the hour's resolved requests instead of
every request registered in the last day (bench/audit.py: 41 ms → see docs/performance.md).
"""

from django.db import migrations

CREATE = (
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS apr_resolved ON approvals_approvalrequest (workspace_id, decided_at) "
    "WHERE status IN ('approved', 'rejected', 'expired')"
)
DROP = "DROP INDEX CONCURRENTLY IF EXISTS apr_resolved"


def create(apps, schema_editor):
    # SQLite has partial indexes too, but the page computes directly there (insights/selectors.py).
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP)


class Migration(migrations.Migration):
    atomic = False  # CONCURRENTLY: building it on a large table does not hold up registrations and decisions
    dependencies = [
        ("insights", "0003_rollup_schedule"),
        ("approvals", "0008_merge_approver_policy_and_final_requests"),
    ]
    operations = [migrations.RunPython(create, drop)]
