"""The pool's check (hitl_portal/db_pool.py): no round trip for a quiet connection, a dead one replaced."""

import tempfile
import time

import psycopg
import pytest
from psycopg_pool import ConnectionPool

from edge.hub import conninfo
from hitl_portal.db_pool import check_connection

pytestmark = [pytest.mark.django_db]


def _sent_while(conn: psycopg.Connection, action) -> str:
    """What libpq sent and received on `conn` while `action` ran (its protocol trace)."""
    with tempfile.TemporaryFile("w+") as trace:
        conn.pgconn.trace(trace.fileno())
        try:
            action()
        finally:
            conn.pgconn.untrace()
        trace.seek(0)
        return trace.read()


def test_a_quiet_connection_is_handed_out_without_a_round_trip():
    with psycopg.connect(conninfo(), autocommit=True) as conn:
        conn.execute("SELECT 1")
        assert _sent_while(conn, lambda: check_connection(conn)) == ""


def test_a_connection_that_was_told_something_gets_the_full_check():
    with psycopg.connect(conninfo(), autocommit=True) as conn, psycopg.connect(conninfo(), autocommit=True) as other:
        conn.execute("LISTEN hitl_pool_test")
        other.execute("NOTIFY hitl_pool_test")
        time.sleep(0.2)
        assert "Query" in _sent_while(conn, lambda: check_connection(conn))


def test_a_connection_postgresql_terminated_is_refused_and_the_pool_replaces_it():
    with ConnectionPool(conninfo(), min_size=1, max_size=1, check=check_connection, open=True) as pool:
        with pool.connection() as conn:
            first = conn.info.backend_pid
        with psycopg.connect(conninfo(), autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", [first])
            # Until the backend has gone (its goodbye is then on the socket); a fixed pause lost the race
            # on a loaded machine and handed out the connection before PostgreSQL had closed it.
            deadline = time.monotonic() + 10
            while killer.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [first]).fetchone():
                assert time.monotonic() < deadline, "PostgreSQL did not end the backend"
                time.sleep(0.02)
        with pool.connection() as conn:
            assert conn.execute("SELECT pg_backend_pid()").fetchone()[0] != first


def test_the_check_is_set_where_psycopg_pool_keeps_it():
    """check_pooled_connections_quietly replaces the check Django gave the pool: psycopg-pool keeps it in _check."""
    pool = ConnectionPool(conninfo(), open=False, check=ConnectionPool.check_connection)
    assert pool._check is ConnectionPool.check_connection
