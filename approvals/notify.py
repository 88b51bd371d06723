"""Wake engines that long-poll a request: PostgreSQL NOTIFY, delivered when the transaction commits."""

from django.db import connection

CHANNEL = "hitl_approvals"
# A token stopped being worth anything (`token:<id>`, `user:<id>`): sent by triggers, workspaces/migrations/0002.
TOKENS_CHANNEL = "hitl_tokens"
# A run grant was created (`<config pk>:<rule id>`): sent by a trigger, approvals/migrations/0009.
GRANTS_CHANNEL = "hitl_grants"


def notify_changed(public_id: str) -> None:
    """Tell listeners that this request was decided or expired. Call inside the deciding transaction."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [CHANNEL, public_id])
    # SQLite has no NOTIFY: waiters there poll (see approvals.waiting).


def notify_changed_many(public_ids: list[str]) -> None:
    """notify_changed for a batch in one round trip: the sweep expires a thousand rows at a time.

    One statement per id made the sweep of 100,000 requests ~10× slower than its UPDATE (bench/).
    """
    if public_ids and connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, id) FROM unnest(%s::text[]) AS id", [CHANNEL, list(public_ids)])
