"""Ending a pending request — decided, answered, expired, undeliverable, halted, frozen: one statement.

Every way a pending request ends is `end_pending` running an `ending_statement`, which its caller
shapes (what to set, which rows) and which always does the same three things in one round trip:

- the UPDATE re-checks `pending` on each row it changes, so a request that has ended is never
  overwritten — of two ends racing, the database lets exactly one through;
- the audit records of the rows it ended (the caller's `record_cte` over `ended`), in the same
  statement, so an end is never unaudited;
- a NOTIFY per ended row on approvals.notify.CHANNEL (sent at commit), which wakes its waiting engines.

It also hands what ended (id, status, requested_by) to the apps above that tell people of it
(approvals/extensions.py `ended`), read from the same statement: an end costs no query more for it.

`claim`: lock the rows first with `FOR UPDATE SKIP LOCKED` (the expiry sweep and a single read's
expiry, approvals/expiry/expire.py), so concurrent sweeps split the work instead of queueing, and a
row a reviewer is deciding right now is skipped rather than waited for.
"""

from django.db import connection

from approvals import extensions
from approvals.models import ApprovalRequest, Status
from approvals.notify import CHANNEL

TABLE = ApprovalRequest._meta.db_table


def ending_statement(
    *, set_: str, audit: str, where: str = "", claim: str = "", columns: tuple[str, ...] = ("id",), audited: tuple = ()
) -> str:
    """The statement ending the pending requests `where` selects (among those `claim` locked, if given).

    set_: the SET clause (`status = …`, and whatever else the end records); where: a condition on the
    request's row (`apr`); audit: a `record_cte` selecting from `ended`; claim: a `SELECT id …` to
    lock first (FOR UPDATE SKIP LOCKED is added); columns: what the statement answers per ended row
    (each row's NOTIFY follows them); audited: the further columns the audit CTE reads of `ended`.
    """
    told = ("id", "status", "requested_by")  # for the `ended` hooks, after the NOTIFY; end_pending strips them
    returned = ", ".join(f"apr.{column}" for column in dict.fromkeys((*columns, *audited, "public_id", *told)))
    claimed = f"claimed AS (\n    {claim}\n    FOR UPDATE SKIP LOCKED\n), " if claim else ""
    source = "\n    FROM claimed" if claim else ""
    conditions = ["apr.id = claimed.id"] if claim else []
    conditions += ["apr.status = %(pending)s"] + ([where] if where else [])
    return f"""
WITH {claimed}ended AS (
    UPDATE {TABLE} AS apr
    SET {set_}{source}
    WHERE {" AND ".join(conditions)}
    RETURNING {returned}
),
{audit}
SELECT {", ".join(columns)}, pg_notify(%(channel)s, public_id), {", ".join(told)}
FROM ended
"""


def end_pending(statement: str, params: dict) -> list[tuple]:
    """Run an `ending_statement` with `params`; returns one row (its `columns`) per request it ended.

    Call inside the transaction of the change that ends them (the NOTIFY is sent when it commits).
    """
    with connection.cursor() as cursor:
        cursor.execute(statement, {**params, "pending": Status.PENDING, "channel": CHANNEL})
        rows = cursor.fetchall()
    if rows:
        extensions.ended([extensions.Ended(*row[-3:]) for row in rows])
    return [row[:-3] for row in rows]
