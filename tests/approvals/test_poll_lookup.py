"""A poll reads its one request through the unique index of public ids, however full the table is and
whatever PostgreSQL knows of it: a new deployment's table has no statistics until autovacuum analyzes
it, and meanwhile no poll, long-poll wake-up or request page may scan it."""

import json

from django.db import connection

from approvals.models import ApprovalRequest
from approvals.selectors import _BY_PUBLIC_ID_SQL, approval_get

from ..factories import make_bulk
from .engine_support import make_support_config


def _index_scans(plan: dict) -> list[str]:
    names = [plan["Index Name"]] if "Index Name" in plan else []
    return names + [name for child in plan.get("Plans", []) for name in _index_scans(child)]


def test_a_poll_reads_through_the_unique_index_on_a_table_never_analyzed(acme, alice):
    config = make_support_config(acme, alice)
    wanted = make_bulk(config, 3000)[1234]
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [ApprovalRequest._meta.db_table])
        assert cursor.fetchone()[0] < 0  # never analyzed: the case the plan has to survive
        cursor.execute("EXPLAIN (FORMAT JSON) " + _BY_PUBLIC_ID_SQL, [wanted.public_id, acme.pk])
        explained = cursor.fetchone()[0]
    plan = (json.loads(explained) if isinstance(explained, str) else explained)[0]["Plan"]

    assert plan["Node Type"] == "Index Scan"
    assert plan["Index Name"] == "apr_public_id_unique"
    assert _index_scans(plan) == ["apr_public_id_unique", "rules_config_pkey"]  # the config: by its key
    assert approval_get(workspace=acme, public_id=wanted.public_id).config.public_id == config.public_id
