"""Halts and registrations serialised per workspace, so a registration either commits before a halt
sees it or sees the halt (docs/halting.md, "What is guaranteed").

`hitl_halt_lock(workspace)`: the halt's and the freeze's exclusive advisory lock on the workspace, for
the rest of their transaction. `hitl_halt_covering(config, run)`: the halt in force that covers a
request of that run under that config (its workspace frozen, or the run halted under any config or this
one), after taking the config's workspace's lock shared. The workspace is read through the config, so
the registration binds two values for it, not three (psycopg's statement cache: approvals/engine/insert.py). It is plpgsql and VOLATILE so that its query takes a snapshot of
its own after the lock is granted: a registration that waited for a halt's commit sees that halt,
which the snapshot of the statement calling it (taken before the wait) would not.
"""

from django.db import migrations

# The advisory lock's first key: a namespace of our own ('HALT'), the workspace's id the second.
LOCK_NAMESPACE = 1212238932

FUNCTIONS = f"""
CREATE OR REPLACE FUNCTION hitl_halt_lock(p_workspace bigint) RETURNS void
LANGUAGE sql VOLATILE AS $$
    SELECT pg_advisory_xact_lock({LOCK_NAMESPACE}, (p_workspace % 2147483648)::int)
$$;

CREATE OR REPLACE FUNCTION hitl_halt_covering(p_config bigint, p_run text)
RETURNS TABLE (halted_by_id integer, halted_by_email varchar, reason varchar)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    p_workspace bigint := (SELECT workspace_id FROM rules_config WHERE id = p_config);
BEGIN
    PERFORM pg_advisory_xact_lock_shared({LOCK_NAMESPACE}, (p_workspace % 2147483648)::int);
    RETURN QUERY
        SELECT h.halted_by_id, h.halted_by_email, h.reason FROM approvals_halt h
        WHERE h.workspace_id = p_workspace AND h.lifted_at IS NULL
          AND (h.run_id = '' OR (h.run_id = p_run AND (h.config_id IS NULL OR h.config_id = p_config)))
        ORDER BY h.created_at, h.id
        LIMIT 1;
END
$$;
"""

DROP = """
DROP FUNCTION IF EXISTS hitl_halt_covering(bigint, text);
DROP FUNCTION IF EXISTS hitl_halt_lock(bigint);
"""


class Migration(migrations.Migration):
    dependencies = [
        ("approvals", "0016_execution_started"),
    ]

    operations = [migrations.RunSQL(FUNCTIONS, DROP)]
