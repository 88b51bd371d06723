"""DATABASES for settings.py: DATABASE_URL, pooled under the ASGI server, and the transaction pooler.

HITL_DB_TRANSACTION_POOLER=true says DATABASE_URL is a pooler in transaction mode (PgBouncer,
docs/deploy.md): consecutive transactions of one Django connection may run on different server
connections, so nothing may outlive a transaction on the server — no prepared statement (psycopg's
`prepare_threshold=None` turns preparing off, `prepare=True` included), no server-side cursor
(DISABLE_SERVER_SIDE_CURSORS), no LISTEN. Everything else the portal runs already keeps to one
transaction: `set_config(…, true)`, `SET TRANSACTION`, advisory locks only for a transaction
(`pg_advisory_xact_lock`, a halt's: approvals/halts/covering.py), no session locks. The wait hub's
LISTEN connection goes to HITL_LISTEN_DATABASE_URL (direct to PostgreSQL) when it is set.
"""

import os

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from launch import run_env


def _flag(name: str) -> bool:
    value = os.environ.get(name, "false").lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}")
    return value in ("true", "1", "yes")


def _int(name: str, default: str) -> int:
    value = os.environ.get(name, default)
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None


def _postgres(url_variable: str, **options) -> dict:
    database = dj_database_url.config(env=url_variable, **options)
    if database["ENGINE"] != "django.db.backends.postgresql":
        raise ImproperlyConfigured(f"{url_variable} must name a PostgreSQL database, not {database['ENGINE']}.")
    return database


def pooled_under_asgi(database: dict) -> dict:
    """Under the ASGI server (asgi.py sets HITL_ASGI) sync code runs on threads of the moment, so a
    persistent connection per thread would pile up: PostgreSQL connections come from psycopg's pool
    instead, at most HITL_DB_POOL_SIZE per server process (plus the two of edge/hub.py)."""
    if os.environ.get("HITL_ASGI"):
        database["CONN_MAX_AGE"] = 0  # Django refuses a pool beside persistent connections
        database.setdefault("OPTIONS", {})["pool"] = {
            "min_size": 2,
            "max_size": _int("HITL_DB_POOL_SIZE", "4"),
            "timeout": 20,  # a request waits this long for a free connection before it fails
        }
    return database


def databases() -> dict:
    # PostgreSQL only (psycopg 3): one database engine, so one form of every statement. `make run` and
    # `make test` start an embedded one and set DATABASE_URL when it is not set; a command in a second
    # shell finds the one a running `make run` uses (launch/run_env.py).
    if not os.environ.get("DATABASE_URL") and not run_env.load():
        raise ImproperlyConfigured(
            "DATABASE_URL is not set: give it a PostgreSQL database (postgres://user@host:5432/name), or use"
            " `make run` / `make test`, which start an embedded PostgreSQL when it is not set (while `make run`"
            " is up, commands in another shell use its database)."
        )
    # Persistent connections: a request should not pay for a new connection.
    default = pooled_under_asgi(
        _postgres("DATABASE_URL", conn_max_age=_int("CONN_MAX_AGE", "60"), conn_health_checks=True)
    )
    # psycopg prepares a statement a cursor asks it to (`prepare=True`: the registration's,
    # approvals/engine/insert.py); Django's own cursors bind client-side and never do.
    default.setdefault("OPTIONS", {}).setdefault("prepare_threshold", 5)
    return {"default": behind_transaction_pooler(default)}


def behind_transaction_pooler(database: dict) -> dict:
    """Nothing that outlives a transaction on the server, when HITL_DB_TRANSACTION_POOLER says so."""
    if _flag("HITL_DB_TRANSACTION_POOLER"):
        database.setdefault("OPTIONS", {})["prepare_threshold"] = None
        database["DISABLE_SERVER_SIDE_CURSORS"] = True
    return database


def listen_database() -> dict | None:
    """Where edge/hub.py LISTENs when DATABASE_URL is a transaction pooler (which cannot LISTEN)."""
    if not os.environ.get("HITL_LISTEN_DATABASE_URL"):
        return None
    return _postgres("HITL_LISTEN_DATABASE_URL")


def close_before_fork() -> None:
    """The startup checks' connections, and the pool they came from, closed: a server that imports the
    app once and forks its workers from it (gunicorn's preload_app) must not hand them the same
    sockets, nor a pool whose threads do not survive the fork. Each worker opens its own."""
    from django.db import connections

    for connection in connections.all(initialized_only=True):
        connection.close()
        if connection.vendor == "postgresql":
            connection.close_pool()
