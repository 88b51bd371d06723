"""What docs/hub.md promises of the hub's connection and of the triggers it listens to."""

import psycopg
import pytest
from django.conf import settings
from django.db import connection

from edge.hub import conninfo

SEARCH_PATH = "hitl_hub_probe,public"


def test_the_listen_connection_is_djangos_database_with_its_options_and_keepalives(db, monkeypatch):
    options = {**settings.DATABASES["default"].get("OPTIONS", {}), "options": f"-c search_path={SEARCH_PATH}"}
    options |= {"sslmode": "disable", "server_side_binding": False, "prepare_threshold": 5}
    monkeypatch.setitem(settings.DATABASES["default"], "OPTIONS", options)
    monkeypatch.setitem(settings.DATABASES["default"], "NAME", connection.settings_dict["NAME"])

    info = psycopg.conninfo.conninfo_to_dict(conninfo())

    assert info["sslmode"] == "disable" and "server_side_binding" not in info and "prepare_threshold" not in info
    assert info["keepalives"] == "1" and int(info["keepalives_idle"]) <= 5 and int(info["connect_timeout"]) <= 5
    with psycopg.connect(conninfo(), autocommit=True) as conn:
        assert conn.execute("SHOW search_path").fetchone()[0].replace(" ", "") == SEARCH_PATH


def test_every_table_with_a_notifying_row_trigger_has_a_truncate_trigger(db):
    """TRUNCATE fires no row trigger: wherever a row trigger NOTIFYs the hub, a statement-level one does too."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            SELECT t.tgrelid::regclass::text, bool_or(t.tgtype & 1 = 1 AND p.proname <> 'hitl_notify_truncate'),
                   bool_or(t.tgtype & 32 = 32 AND p.proname = 'hitl_notify_truncate')
            FROM pg_trigger t JOIN pg_proc p ON p.oid = t.tgfoid
            WHERE NOT t.tgisinternal AND p.proname LIKE 'hitl_notify%%'
            GROUP BY 1
            """
        )
        tables = {table: (row_notifies, truncate_notifies) for table, row_notifies, truncate_notifies in cursor}
    with_row_triggers = {table for table, (row, _) in tables.items() if row}
    assert {"workspaces_apitoken", "approvals_grant", "approvals_halt"} <= with_row_triggers
    assert {table for table in with_row_triggers if not tables[table][1]} == set()


# The listened tables a TRUNCATE can empty (users' and workspaces' have history that refuses it).
TRUNCATED = [
    ("workspaces_apitoken", "hitl_tokens"),
    ("workspaces_membership", "hitl_tokens"),
    ("approvals_grant", "hitl_grants"),
    ("approvals_halt", "hitl_halts"),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(("table", "channel"), TRUNCATED)
def test_a_truncated_listened_table_is_heard(table, channel):
    """Every table the hub hears row changes of: a TRUNCATE (which fires no row trigger) is heard too."""
    with psycopg.connect(conninfo(), autocommit=True) as listener:
        listener.execute(f"LISTEN {channel}")
        with connection.cursor() as cursor:
            cursor.execute(f"TRUNCATE {table} CASCADE")
        heard = [(n.channel, n.payload) for n in listener.notifies(timeout=5, stop_after=1)]
    assert (channel, f"truncate:{table}") in heard


def test_the_hub_listens_on_hitl_listen_database_url_when_database_url_is_a_pooler(db, monkeypatch):
    """Through a transaction pooler LISTEN hears nothing: HITL_LISTEN_DATABASE_URL names the direct way."""
    direct = {**settings.DATABASES["default"], "HOST": "db.direct.test", "PORT": 5433, "OPTIONS": {}}
    monkeypatch.setattr(settings, "HITL_LISTEN_DATABASE", direct, raising=False)
    info = psycopg.conninfo.conninfo_to_dict(conninfo())
    assert (info["host"], info["port"]) == ("db.direct.test", "5433")
    monkeypatch.setattr(settings, "HITL_LISTEN_DATABASE", None)
    assert psycopg.conninfo.conninfo_to_dict(conninfo())["host"] == settings.DATABASES["default"]["HOST"]
