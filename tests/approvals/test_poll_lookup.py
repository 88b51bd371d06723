"""A poll reads its one request through the unique index of public ids, however full the table is and
whatever PostgreSQL knows of it: a new deployment's table has no statistics until autovacuum analyzes
it, and meanwhile no poll, long-poll wake-up or request page may scan it."""

import pytest
from django.db import connection

from approvals.exceptions import ApprovalNotFound
from approvals.models import ApprovalRequest
from approvals.review.selectors import _BY_PUBLIC_ID_SQL, approval_get

from ..factories import make_bulk
from .engine_support import make_support_config


def _index_scans(plan: dict) -> list[str]:
    names = [plan["Index Name"]] if "Index Name" in plan else []
    return names + [name for child in plan.get("Plans", []) for name in _index_scans(child)]


def test_a_poll_reads_through_the_unique_index_on_a_table_never_analyzed(acme, alice):
    config = make_support_config(acme, alice)
    wanted = make_bulk(config, 3000)[1234]
    with connection.cursor() as cursor:
        # As PostgreSQL knows a table it has never analyzed, whatever autovacuum did meanwhile (undone
        # with the test's transaction).
        cursor.execute(
            "UPDATE pg_class SET reltuples = -1, relpages = 0 WHERE relname = %s", [ApprovalRequest._meta.db_table]
        )
        cursor.execute("EXPLAIN (FORMAT JSON) " + _BY_PUBLIC_ID_SQL, [wanted.public_id])
        plan = cursor.fetchone()[0][0]["Plan"]  # EXPLAIN's JSON, loaded by psycopg

    assert plan["Node Type"] == "Index Scan"
    assert plan["Index Name"] == "apr_public_id_unique"
    assert _index_scans(plan) == ["apr_public_id_unique", "rules_config_pkey"]  # the config: by its key
    assert approval_get(workspace=acme, public_id=wanted.public_id).config.public_id == config.public_id


def test_the_lookup_by_public_id_alone_still_reads_another_workspaces_request_as_missing(acme, alice, globex):
    wanted = make_bulk(make_support_config(acme, alice), 1)[0]
    with pytest.raises(ApprovalNotFound):
        approval_get(workspace=globex, public_id=wanted.public_id)
    assert approval_get(workspace=acme, public_id=wanted.public_id).pk == wanted.pk
