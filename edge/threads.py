"""The event loop's worker threads, which hand their database connections back after every job.

Django's ASGI handler runs some sync code with `thread_sensitive=False` — the 404/403/400/500
pages among it (`response_for_exception`) — on the loop's default executor, where no
`request_finished` ever closes what the job opened: the page's context processor read the
session there, and each such page kept a pooled connection for good until the pool was empty.
The edge's own jobs run here too. So every job, whoever submitted it, ends by handing back what
it took: under the pool (CONN_MAX_AGE=0), `close_old_connections` returns it to the pool.
"""

from concurrent.futures import Future, ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections


def pool_size() -> int | None:
    """The most connections this process's pool opens (hitl_portal/settings.py); None without a pool."""
    pool = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
    return pool["max_size"] if isinstance(pool, dict) else None


class ConnectionReturningExecutor(ThreadPoolExecutor):
    """One thread more than the pool has connections: a job ready for each connection as it comes back.

    More threads (Python's default is cores + 4) could only wait for a connection, and each one woken
    costs GIL hand-offs the working ones need; exactly as many left the reviewers' pages waiting longer
    beside thousands of long-polls. The figures: docs/performance.md.
    """

    def __init__(self) -> None:
        size = pool_size()
        super().__init__(max_workers=size + 1 if size else None, thread_name_prefix="edge")

    def submit(self, fn, /, *args, **kwargs) -> Future:
        def job():
            try:
                return fn(*args, **kwargs)
            finally:
                close_old_connections()

        return super().submit(job)
