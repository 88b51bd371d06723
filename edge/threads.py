"""The event loop's worker threads: they hand their database connections back after every job, and
serve a woken waiter's read before any new call.

Django's ASGI handler runs some sync code with `thread_sensitive=False` — the 404/403/400/500
pages among it (`response_for_exception`) — on the loop's default executor, where no
`request_finished` ever closes what the job opened: the page's context processor read the
session there, and each such page kept a pooled connection for good until the pool was empty.
The edge's own jobs run here too. So every job, whoever submitted it, ends by handing back what
it took: under the pool (CONN_MAX_AGE=0), `close_old_connections` returns it to the pool.

Two lanes: beside thousands of waiting engines, many ask again every second, and each new wait's
first read is a job here. The read that answers an engine whose request was just
decided (`submit_first`) goes ahead of them, or the decision would reach its engine only after
every read queued before it.
"""

import asyncio
import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor

from django.conf import settings
from django.db import close_old_connections


def pool_size() -> int | None:
    """The most connections this process's pool opens (hitl_portal/settings.py); None without a pool."""
    pool = settings.DATABASES["default"].get("OPTIONS", {}).get("pool")
    return pool["max_size"] if isinstance(pool, dict) else None


class ConnectionReturningExecutor(ThreadPoolExecutor):
    """One thread more than the pool has connections: a job ready for each connection as it comes back.

    More threads could only wait for a connection, and each one woken costs GIL hand-offs the
    working ones need; exactly as many left the reviewers' pages waiting longer beside thousands of
    long-polls. The figures: docs/performance.md. Threads start as jobs arrive, up to that number.

    A ThreadPoolExecutor only because asyncio takes nothing else as a loop's default executor: its
    queue is one lane, so the jobs and their threads are this class's own (submit, shutdown).
    """

    def __init__(self, max_workers: int | None = None) -> None:
        size = pool_size()
        python_default = min(32, (os.cpu_count() or 1) + 4)  # ThreadPoolExecutor's, where there is no pool
        self.max_workers = max_workers or (size + 1 if size else python_default)
        super().__init__(max_workers=self.max_workers, thread_name_prefix="edge")
        self._first: deque = deque()
        self._rest: deque = deque()
        self._ready = threading.Condition()
        self._workers: list[threading.Thread] = []
        self._idle = 0
        self._closed = False

    def submit(self, fn, /, *args, **kwargs) -> Future:
        return self._put(self._rest, fn, args, kwargs)

    def submit_first(self, fn, /, *args, **kwargs) -> Future:
        """Run `fn` before every job not submitted first (and after those that were)."""
        return self._put(self._first, fn, args, kwargs)

    def _put(self, lane: deque, fn, args, kwargs) -> Future:
        future: Future = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("cannot schedule new futures after shutdown")
            lane.append((future, fn, args, kwargs))
            if self._idle < len(self._first) + len(self._rest) and len(self._workers) < self.max_workers:
                thread = threading.Thread(target=self._work, name=f"edge_{len(self._workers)}", daemon=True)
                self._workers.append(thread)
                thread.start()
            self._ready.notify()
        return future

    def _work(self) -> None:
        while True:
            with self._ready:
                while not (self._first or self._rest or self._closed):
                    self._idle += 1
                    self._ready.wait()
                    self._idle -= 1
                if not (self._first or self._rest):
                    return  # shut down, and nothing is left to run
                future, fn, args, kwargs = (self._first or self._rest).popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # the caller's to see, as ThreadPoolExecutor hands it over
                future.set_exception(exc)
            else:
                future.set_result(result)
            finally:
                close_old_connections()
                del fn, args, kwargs

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._ready:
            self._closed = True
            if cancel_futures:
                for lane in (self._first, self._rest):
                    while lane:
                        lane.popleft()[0].cancel()
            self._ready.notify_all()
        if wait:
            for thread in list(self._workers):
                thread.join()


_executors: dict[asyncio.AbstractEventLoop, ConnectionReturningExecutor] = {}


def install() -> None:
    """At the server's startup (ASGI lifespan): this loop's default executor becomes a two-lane one."""
    loop = asyncio.get_running_loop()
    _executors[loop] = executor = ConnectionReturningExecutor()
    loop.set_default_executor(executor)


def run_first(fn, /, *args) -> asyncio.Future:
    """`loop.run_in_executor(None, fn, *args)`, ahead of every job submitted the usual way."""
    loop = asyncio.get_running_loop()
    executor = _executors.get(loop)
    if executor is None:  # no lifespan ran (an ASGI server started without it): one lane
        return loop.run_in_executor(None, fn, *args)
    return asyncio.wrap_future(executor.submit_first(fn, *args), loop=loop)
