"""Which halt covers a request, decided by the database under a per-workspace lock (docs/halting.md).

A halt or a freeze takes its workspace's advisory lock exclusively (`halt_lock`) before anything else
in its transaction; the registration statement and every approving decision take it shared, inside
`hitl_halt_covering` (approvals/migrations/0017_halt_covering.py), then read the halts in force with
a snapshot taken after the lock. So a registration either committed before the halt's statements
ran — and the halt rejects it with the rest — or waited for the halt's commit and sees it: nothing of
a halted run or a frozen workspace is left pending, whichever process or node registered it.
"""

from django.db import connection

# The halt in force covering the request being written: (halted_by_id, halted_by_email, reason), one row
# or none. Bound: the config (the workspace is read through it) and the run.
COVERING_SQL = "SELECT * FROM hitl_halt_covering(%s, %s)"
# A condition on a request's row (`apr`): no halt in force covers it. Approving decisions carry it.
NOT_HALTED = "NOT EXISTS (SELECT FROM hitl_halt_covering(apr.config_id, apr.run_id))"


def halt_lock(workspace_id: int) -> None:
    """Take the workspace's halt lock exclusively until the transaction ends: the first statement of a
    halt or a freeze, so the registrations it races have either committed or wait to see it."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT hitl_halt_lock(%s)", [workspace_id])


def halt_covering(*, config_id: int, run_id: str) -> tuple | None:
    """The halt in force covering a request of (config, run): (halted_by_id, halted_by_email, reason)."""
    with connection.cursor() as cursor:
        cursor.execute(COVERING_SQL, [config_id, run_id])
        return cursor.fetchone()
