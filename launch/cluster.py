"""`python -m launch.cluster`: the django-q2 cluster as a service manager should run it.

    python -m launch.cluster            (deploy/hitl-cluster.service runs this)

django-q2's `manage.py qcluster` leaves SIGTERM at its default in its sentinel and workers, so a
SIGTERM to the whole process group — systemd's stop, `kill -- -PGID`, a container's stop — kills
them under the cluster's main process, which then waits without end for a sentinel that is gone.
This runs qcluster as a child in a process group of its own and passes a SIGTERM (or Ctrl-C) to
that child's leader alone, once: the cluster stops its workers in order, as it does for a SIGTERM
to its main process, and whatever is left after children.STOP_GRACE_SECONDS is killed. It exits
with 0 once stopped by a signal, else with the cluster's own exit status.
"""

import signal
import sys
import time

from launch.children import start, stop_all


class Stop(Exception):
    pass


def _stop(*_) -> None:
    raise Stop


def main() -> int:
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    children = []
    try:
        children.append(start([sys.executable, "manage.py", "qcluster"]))
        while children[0].poll() is None:
            time.sleep(0.5)
        return children[0].returncode
    except Stop:
        return 0
    finally:
        stop_all(children)


if __name__ == "__main__":
    sys.exit(main())
