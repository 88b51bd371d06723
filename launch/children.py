"""The processes make run and the cluster's supervisor start: each in a process group of its own, told to
stop once, and killed (its whole group) when it has not stopped in time."""

import os
import signal
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Past this after the one SIGTERM, what is left of a child's group is killed: the cluster has hung
# mid-shutdown, and a service manager gives up on a stop soon after (systemd: TimeoutStopSec).
STOP_GRACE_SECONDS = 8


def start(command: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    # A process group of its own: the terminal's Ctrl-C, or a SIGTERM to our group, is not sent to it,
    # only our one SIGTERM to its leader.
    return subprocess.Popen(command, cwd=ROOT, stdin=subprocess.DEVNULL, process_group=0, env=env)


def stop_all(children: list[subprocess.Popen]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C may not cut the cleanup short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for child in children:
        if child.poll() is None:
            # The leader alone: the cluster stops its own workers in order (told all at once, its
            # workers died under its sentinel and it hung), as gunicorn's master stops its workers.
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for child in children:  # whatever is left of each group, the cluster's workers included
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        child.wait()
