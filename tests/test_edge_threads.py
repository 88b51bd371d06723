"""The edge's worker threads (edge/threads.py): a woken waiter's read goes ahead of the queue."""

import threading

import pytest

from edge.threads import ConnectionReturningExecutor


def _busy(executor: ConnectionReturningExecutor, workers: int) -> threading.Event:
    """Occupy every thread until the returned event is set."""
    release, started = threading.Event(), threading.Semaphore(0)

    def hold() -> None:
        started.release()
        release.wait(10)

    for _ in range(workers):
        executor.submit(hold)
    for _ in range(workers):
        assert started.acquire(timeout=10)
    return release


def test_a_job_submitted_first_runs_before_every_job_already_queued():
    executor = ConnectionReturningExecutor(max_workers=1)
    release = _busy(executor, 1)
    ran = []
    futures = [executor.submit(ran.append, "new wait 1"), executor.submit(ran.append, "new wait 2")]
    futures.append(executor.submit_first(ran.append, "woken waiter"))
    futures.append(executor.submit(ran.append, "new wait 3"))
    release.set()
    for future in futures:
        future.result(timeout=10)
    assert ran == ["woken waiter", "new wait 1", "new wait 2", "new wait 3"]
    executor.shutdown()


def test_it_runs_at_most_its_threads_at_once_and_hands_back_results_and_errors():
    executor = ConnectionReturningExecutor(max_workers=3)
    release = _busy(executor, 3)
    queued = executor.submit(lambda: threading.current_thread().name)
    assert not queued.done()  # three threads are busy: the fourth job waits for one
    release.set()
    assert queued.result(timeout=10).startswith("edge_")
    assert len({executor.submit(lambda: threading.current_thread().name).result(timeout=10) for _ in range(20)}) <= 3
    with pytest.raises(ZeroDivisionError):
        executor.submit(lambda: 1 / 0).result(timeout=10)
    executor.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        executor.submit(print)


def test_shutting_down_cancels_what_waits_when_asked_and_waits_for_what_runs():
    executor = ConnectionReturningExecutor(max_workers=1)
    release = _busy(executor, 1)
    running = executor.submit_first(lambda: "done")  # queued behind the busy thread's job
    executor.submit(print).cancel()
    waiting = executor.submit(print)
    threading.Timer(0.05, release.set).start()
    executor.shutdown(wait=True, cancel_futures=True)  # returns once its threads have ended
    assert waiting.cancelled() and running.cancelled()
