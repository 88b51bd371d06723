"""Bulk approval requests in SQL (INSERT … SELECT generate_series): a million rows in seconds, not the ORM."""

from datetime import datetime

TABLE = "approvals_approvalrequest"

# Every NOT NULL column, in the order of the SELECT below.
COLUMNS = (
    "workspace_id, engine_key_id, public_id, kind, status, config_id, config_version, rule_id, boundary, point,"
    " message, run_id, thread_id, caller, target, operation, pass_information_level, summary, arguments,"
    " call_digest, scope, created_at, expires_at, idempotency_key, request_fingerprint, decided_at,"
    " decided_by_id, decided_by_email, decision_action, reason, execution_status, execution_id,"
    " execution_detail, executed_at"
)


def insert_requests(
    cursor,
    *,
    workspace_id: int,
    config_id: int,
    config_version: int,
    rule_id: str,
    engine_key_id: int | None,
    count: int,
    status: str,
    created_from: datetime,
    created_step_ms: int,
    expires_after_s: int,
    tag: str,
    decided_by_id: int | None = None,
    decided_by_email: str = "",
) -> None:
    """Insert `count` gate requests of one status, created `created_step_ms` apart from `created_from`.

    `tag` keeps public ids unique across calls (`apr_<tag><n>`); `expires_after_s` may be negative
    to make requests already overdue.
    """
    action = {"approved": "resume", "rejected": "halt"}.get(status, "")
    decided = status in ("approved", "rejected", "expired")
    cursor.execute(
        f"""
        INSERT INTO {TABLE} ({COLUMNS})
        SELECT %(workspace_id)s, %(engine_key_id)s, 'apr_' || %(tag)s || lpad(g::text, 10, '0'), 'gate',
               %(status)s, %(config_id)s, %(config_version)s, %(rule_id)s, 'delete', 'entry',
               'Check before deleting', 'run_' || g, 'thr_' || (g %% 1000), 'support-agent',
               'crm/customers/' || g, 'delete_record', 'summary', 'Delete customer ' || g, NULL,
               md5(g::text) || md5((g + 1)::text), '',
               created, created + make_interval(secs => %(expires_after_s)s), '', '',
               CASE WHEN %(decided)s THEN created + interval '1 minute' END,
               %(decided_by_id)s, %(decided_by_email)s, %(action)s,
               CASE WHEN %(status)s = 'expired' THEN 'Nobody answered before the deadline.' ELSE '' END,
               '', '', '', NULL
        FROM generate_series(1, %(count)s) AS g,
             LATERAL (SELECT %(created_from)s::timestamptz
                             + make_interval(secs => g::bigint * %(step)s / 1000.0)) AS t(created)
        """,
        {
            "workspace_id": workspace_id,
            "engine_key_id": engine_key_id,
            "tag": tag,
            "status": status,
            "config_id": config_id,
            "config_version": config_version,
            "rule_id": rule_id,
            "expires_after_s": expires_after_s,
            "decided": decided,
            "decided_by_id": decided_by_id if decided and status != "expired" else None,
            "decided_by_email": decided_by_email if decided and status != "expired" else "",
            "action": action,
            "count": count,
            "created_from": created_from,
            "step": created_step_ms,
        },
    )
