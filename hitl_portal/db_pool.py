"""How psycopg's pool checks a connection before handing it out (settings.pooled_under_asgi, asgi.py).

psycopg's own check (`ConnectionPool.check_connection`, what Django's CONN_HEALTH_CHECKS gives a
pool) is a round trip to PostgreSQL for every connection taken — under the ASGI server that is
every request and every edge job, each of which takes a connection and hands it back
(edge/threads.py): on the engines' registration it was one of its two statements
(docs/performance.md). A connection PostgreSQL has closed, or sent anything to while it sat idle
in the pool, has something to read on its socket: the closing message and the end of the stream
when PostgreSQL terminated it or restarted. So the socket is polled first (no wait, no round
trip), and only a connection with something to read, or one psycopg already knows is broken, gets
psycopg's full check — which fails for a dead one, so the pool replaces it.
"""

import select

from django.db import connections
from psycopg import Connection
from psycopg.pq import ConnStatus, TransactionStatus
from psycopg_pool import ConnectionPool


def check_connection(conn: Connection) -> None:
    """Return quietly when `conn` may be handed out; raise (psycopg's check does) when it is dead."""
    if not _quiet(conn):
        ConnectionPool.check_connection(conn)


def _quiet(conn: Connection) -> bool:
    """Nothing to read on an open, idle connection: nobody has closed it or told it anything."""
    pgconn = conn.pgconn
    if pgconn.status != ConnStatus.OK or pgconn.transaction_status != TransactionStatus.IDLE:
        return False
    try:
        poller = select.poll()  # not select.select: the server's descriptors go past FD_SETSIZE
        poller.register(pgconn.socket, select.POLLIN | select.POLLERR | select.POLLHUP)
        return not poller.poll(0)
    except (OSError, ValueError):  # no socket to poll: let the full check say what is wrong
        return False


def check_pooled_connections_quietly() -> None:
    """Give each pool of this process this module's check in place of psycopg's (at server start, asgi.py).

    Django hands its pool psycopg's check itself (CONN_HEALTH_CHECKS) and takes no other: it is set
    on the pool Django made, which psycopg keeps in `_check` (psycopg-pool is pinned; tests/test_db_pool.py).
    """
    for alias in connections:
        pool = connections[alias].pool
        if pool is not None and pool._check is ConnectionPool.check_connection:
            pool._check = check_connection
