"""hitl_portal/databases.py: DATABASE_URL as a transaction pooler (PgBouncer) or direct."""

import pytest
from django.core.exceptions import ImproperlyConfigured

from hitl_portal import databases

URL = "postgres://hitl@127.0.0.1:6432/hitl"


def test_a_transaction_pooler_gets_no_prepared_statement_and_no_server_side_cursor(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", URL)
    monkeypatch.setenv("HITL_DB_TRANSACTION_POOLER", "true")
    default = databases.databases()["default"]
    assert default["OPTIONS"]["prepare_threshold"] is None and default["DISABLE_SERVER_SIDE_CURSORS"] is True


def test_direct_the_registration_may_prepare_and_cursors_are_djangos(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", URL)
    monkeypatch.delenv("HITL_DB_TRANSACTION_POOLER", raising=False)
    default = databases.databases()["default"]
    assert default["OPTIONS"]["prepare_threshold"] == 5 and not default.get("DISABLE_SERVER_SIDE_CURSORS")


def test_the_listen_database_is_direct_when_named_and_must_be_postgresql(monkeypatch):
    monkeypatch.delenv("HITL_LISTEN_DATABASE_URL", raising=False)
    assert databases.listen_database() is None
    monkeypatch.setenv("HITL_LISTEN_DATABASE_URL", "postgres://hitl@db.internal:5432/hitl")
    assert databases.listen_database()["HOST"] == "db.internal"
    monkeypatch.setenv("HITL_LISTEN_DATABASE_URL", "sqlite:///x.db")
    with pytest.raises(ImproperlyConfigured, match="HITL_LISTEN_DATABASE_URL must name a PostgreSQL database"):
        databases.listen_database()
    monkeypatch.setenv("HITL_DB_TRANSACTION_POOLER", "sometimes")
    with pytest.raises(ImproperlyConfigured, match="HITL_DB_TRANSACTION_POOLER must be true or false"):
        databases.behind_transaction_pooler({})
