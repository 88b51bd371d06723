"""Bulk approval requests in SQL (INSERT … SELECT generate_series): a million rows in seconds, not the ORM."""

from datetime import datetime

TABLE = "approvals_approvalrequest"

# Every NOT NULL column, in the order of the SELECT below.
COLUMNS = (
    "workspace_id, engine_key_id, public_id, kind, status, config_id, config_version, rule_id, boundary, point,"
    " message, run_id, thread_id, caller, target, operation, pass_information_level, summary, arguments,"
    " call_digest, scope, created_at, expires_at, idempotency_key, request_fingerprint, decided_at,"
    " decided_by_id, decided_by_email, on_behalf_of, decision_action, reason, execution_status, execution_id,"
    " execution_detail, executed_at, requested_by, approvals_required, self_approval, allow_run_grant,"
    " require_passkey, condition_error, allow_edit, title, plan, approved_digest, undeliverable, execution_digest"
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
               %(decided_by_id)s, %(decided_by_email)s, '', %(action)s,
               CASE WHEN %(status)s = 'expired' THEN 'Nobody answered before the deadline.' ELSE '' END,
               '', '', '', NULL, '', 1, false, false, false, '', false, '', '', '', false, ''
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


def seed_big_table(bench) -> None:
    """The million rows: 60 days of decided history and `bench.pending` requests from the last 12 hours.

    Then the pending requests' ids, shuffled, for the sections that poll or decide them.
    """
    import random
    import time
    from datetime import UTC

    from django.db import connection

    from bench.harness import log

    world, total, pending = bench.world, bench.total, bench.pending
    log(f"seeding {total:,} requests ({pending:,} pending) with INSERT … SELECT generate_series")
    t0 = time.perf_counter()
    seed_history(world, total=total, pending=pending, now=datetime.now(UTC))
    bench.results["seed_s"] = time.perf_counter() - t0
    log(f"seeded in {bench.results['seed_s']:.0f} s")

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT public_id FROM {TABLE} WHERE public_id LIKE 'apr_pend%%'")
        ids = [r[0] for r in cursor.fetchall()]
    random.Random(1).shuffle(ids)
    bench.pending_ids = ids
    bench.ids_file.write_text("\n".join(ids[:5000]) + "\n")


def seed_history(world, *, total: int, pending: int, now: datetime) -> None:
    """`total` requests: 60 days of decided history (60% approved, 30% rejected, the rest expired), then
    `pending` of them created over the last 12 hours; VACUUM ANALYZE after. The big table and the audit
    section's insights table are the same shape."""
    from datetime import timedelta

    from bench.harness import vacuum

    history = total - pending
    span_ms = int(60 * 86400 * 1000 / history)  # 60 days of history
    decided = {"approved": int(history * 0.6), "rejected": int(history * 0.3)}
    decided["expired"] = history - sum(decided.values())
    for (status, count), tag in zip(decided.items(), ("appr", "rejd", "expd"), strict=True):
        world.seed(
            count=count, status=status, tag=tag, created_from=now - timedelta(days=61), step_ms=span_ms, ttl_s=86400
        )
    seed_pending(world, count=pending, now=now)
    vacuum()


def seed_pending(world, *, count: int, now: datetime) -> None:
    """`count` pending requests created over the last 12 hours, each with the 24-hour lifetime."""
    from datetime import timedelta

    world.seed(
        count=count,
        status="pending",
        tag="pend",
        created_from=now - timedelta(hours=12),
        step_ms=max(1, int(12 * 3600 * 1000 / count)),
        ttl_s=86400,
    )
