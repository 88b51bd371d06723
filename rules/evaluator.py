"""Evaluating a condition where a runaway one can be stopped: in an evaluator process, killed at the time limit.

The CEL library evaluates in Rust holding the GIL and cannot be interrupted, so a thread with a
timeout would still freeze its whole process. A condition whose bound (rules/condition_cost.py) is
above what runs on the caller's thread is sent instead to a child process that imports only the
library (rules/evaluator_child.py) and waited for at most the limit; past it the child is killed
(SIGKILL: nothing in it needs cleaning up) and the next evaluation starts a fresh one. Each process
of the portal keeps up to IDLE_KEPT children between evaluations; the waiting thread holds no GIL
while it waits.
"""

import atexit
import json
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

CHILD = Path(__file__).with_name("evaluator_child.py")
IDLE_KEPT = 2
# Starting a child (a Python loading the library) is not the condition's time; it has this long.
START_SECONDS = 30.0


class EvaluatorOverrun(Exception):
    """The evaluation ran past its limit; its process was killed."""


class EvaluatorGone(Exception):
    """The evaluator process died (out of memory, a crash): the condition could not be evaluated."""


class _Child:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-I", str(CHILD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        self.pid = os.getpid()  # the portal process that owns it (a fork must not share its pipes)
        try:
            self.read(1, deadline=time.monotonic() + START_SECONDS)
        except (EvaluatorOverrun, EvaluatorGone):
            self.kill()
            raise EvaluatorGone("the evaluator process did not start") from None

    def read(self, size: int, *, deadline: float) -> bytes:
        descriptor, data = self.process.stdout.fileno(), b""
        while len(data) < size:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([descriptor], [], [], remaining)[0]:
                raise EvaluatorOverrun
            chunk = os.read(descriptor, size - len(data))
            if not chunk:
                raise EvaluatorGone
            data += chunk
        return data

    def ask(self, source: str, variables: dict, *, seconds: float) -> dict:
        body = pickle.dumps((source, variables), protocol=pickle.HIGHEST_PROTOCOL)
        deadline = time.monotonic() + seconds
        try:
            self.process.stdin.write(struct.pack(">I", len(body)) + body)
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise EvaluatorGone from None
        (length,) = struct.unpack(">I", self.read(4, deadline=deadline))
        return json.loads(self.read(length, deadline=deadline))

    def kill(self) -> None:
        self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass


_idle: list[_Child] = []
_lock = threading.Lock()


def _take() -> _Child:
    with _lock:
        while _idle:
            child = _idle.pop()
            if child.pid == os.getpid() and child.process.poll() is None:
                return child
    return _Child()


def _give_back(child: _Child) -> None:
    with _lock:
        if len(_idle) < IDLE_KEPT:
            _idle.append(child)
            return
    child.kill()


@atexit.register
def _close_idle() -> None:
    """At exit, the idle children go too (they would see their stdin close and end, but not before this process)."""
    with _lock:
        children = [child for child in _idle if child.pid == os.getpid()]
        _idle.clear()
    for child in children:
        child.kill()


def evaluate(source: str, variables: dict, *, seconds: float) -> dict:
    """The child's answer ({"value": bool}, {"type", "text"} or {"error", "text"}) within `seconds`.

    EvaluatorOverrun when it takes longer (the child is killed), EvaluatorGone when the child died.
    """
    child = _take()
    try:
        answer = child.ask(source, variables, seconds=seconds)
    except BaseException:
        child.kill()
        raise
    _give_back(child)
    return answer
