"""GET /api/v1/audit: admins only, oldest first, JSONL or CSV, since/until, streamed in constant memory."""

import csv
import io
import json
import tracemalloc
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from audit.services import audit_append
from tests.helpers import make_token

from .helpers import assert_chain, export


def get(client, token: str, query: str = ""):
    return client.get(f"/api/v1/audit{query}", HTTP_AUTHORIZATION=f"Bearer {token}")


def test_only_an_admin_exports_the_audit_log(client, acme, alice, bob):
    assert get(client, make_token(acme, user=bob)).status_code == 403
    assert get(client, make_token(acme, engine="support-engine")).status_code == 403
    assert client.get("/api/v1/audit").status_code in (401, 403)
    response = get(client, make_token(acme, user=alice))
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert 'filename="audit-acme.jsonl"' in response["Content-Disposition"]


def test_it_exports_csv_with_the_same_records_as_jsonl(client, acme, alice):
    audit_append(workspace_id=acme.pk, actor="system", action="test.csv", object="x", data={"a, b": 'say "hi"'})
    token = make_token(acme, user=alice)
    records = export(client, token)

    response = get(client, token, "?format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))

    assert [int(row["seq"]) for row in rows] == [record["seq"] for record in records]
    as_records = [{**row, "seq": int(row["seq"]), "data": json.loads(row["data"])} for row in rows]
    assert_chain(as_records)


def test_since_and_until_select_records_by_time(client, acme, alice):
    now = timezone.now()
    for minutes in (30, 20, 10):
        audit_append(
            workspace_id=acme.pk,
            actor="system",
            action=f"test.{minutes}",
            object="x",
            at=now - timedelta(minutes=minutes),
        )
    token = make_token(acme, user=alice)
    since = (now - timedelta(minutes=25)).isoformat().replace("+00:00", "Z")
    until = (now - timedelta(minutes=15)).isoformat().replace("+00:00", "Z")

    records = export(client, token, f"?since={since}&until={until}")

    assert [record["action"] for record in records] == ["test.20"]


@pytest.mark.parametrize(
    "query, field",
    [("?since=yesterday", "since"), ("?until=2026-13-45T00:00:00Z", "until"), ("?format=xml", "format")],
)
def test_bad_filters_answer_400_naming_the_field(client, acme, alice, query, field):
    response = get(client, make_token(acme, user=alice), query)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_it_exports_25000_records_in_constant_memory(client, acme, alice):
    token = make_token(acme, user=alice)
    # One export first, so the URLconf and the views it imports (a few MB of code objects) are not
    # counted below when this test runs first in its process.
    b"".join(get(client, token).streaming_content)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO audit_auditrecord (workspace_id, seq, at, actor, action, object, data, prev_hash, hash) "
            "SELECT %s, 1000 + n, now(), 'engine:load', 'approval.registered', 'apr_' || n, "
            "jsonb_build_object('target', 'customer ' || n, 'operation', 'delete', 'run_id', 'run_' || n), "
            "md5(n::text) || md5(n::text), md5((n + 1)::text) || md5((n + 1)::text) "
            "FROM generate_series(1, 25000) AS n",
            [acme.pk],
        )

    tracemalloc.start()
    try:
        response = get(client, token)
        size = lines = 0
        for chunk in response.streaming_content:
            size += len(chunk)
            lines += chunk.count(b"\n")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert lines >= 25_000
    assert size > 8_000_000  # about 9 MB of records went out…
    assert peak < 5_000_000, f"peak {peak / 1e6:.1f} MB"  # …through a few MB at most


def test_the_history_page_offers_admins_the_audit_log_for_its_dates(client, acme, alice, bob):
    client.force_login(alice)
    html = client.get("/hitl/approvals/history/?date_from=2026-11-01&date_to=2026-11-30").content.decode()
    assert "Download audit log" in html
    assert "/api/v1/audit?since=2026-11-01T00%3A00%3A00Z&amp;until=2026-12-01T00%3A00%3A00Z&amp;format=csv" in html

    client.force_login(bob)
    assert "Download audit log" not in client.get("/hitl/approvals/history/").content.decode()


@pytest.mark.parametrize("query", ["?since=9999-12-31T23:59:59-01:00", "?until=0001-01-01T00:00:00%2B01:00"])
def test_out_of_range_times_answer_400_not_500(client, acme, alice, query):
    response = get(client, make_token(acme, user=alice), query)
    assert response.status_code == 400, response.content


def test_csv_cells_a_spreadsheet_would_run_are_neutralised_and_recoverable(client, acme, alice):
    hostile = ['=hyperlink("http://evil.example")', "+1", "-2", "@sum(A1)", "\tx", "\rx", "'quoted", "plain"]
    for value in hostile:
        audit_append(workspace_id=acme.pk, actor=value, action="test.csv", object=value)
    response = get(client, make_token(acme, user=alice), "?format=csv")
    rows = [row for row in csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode(), newline=""))]
    rows = [row for row in rows if row["action"] == "test.csv"]

    cells = [row["object"] for row in rows] + [row["actor"] for row in rows]
    assert not [cell for cell in cells if cell.startswith(("=", "+", "-", "@", "\t", "\r"))]
    assert [row["object"] for row in rows] == ["'" + v if v != "plain" else v for v in hostile]
    assert [row["object"][1:] if row["object"].startswith("'") else row["object"] for row in rows] == hostile
