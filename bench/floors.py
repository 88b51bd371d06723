"""The two floors' servers, started beside the portal for the paired loads (bench/server.py `paired`)."""

import os
import subprocess
import sys
from pathlib import Path

from bench.harness import RESULTS, ROOT
from bench.server import BARE_FLOOR_PORT, DJANGO_FLOOR_PORT, stop_group, wait_until_answering

BIN = Path(sys.executable).parent
# Django's classic deploy: gunicorn's threaded workers, 3 processes × 4 threads.
DJANGO_FLOOR = ["bench.floor_wsgi:application", "--worker-class", "gthread", "--workers", "3", "--threads", "4"]
# The bare app under the same process layout as the portal: a uvicorn worker per core.
BARE_FLOOR = ["bench.bare:app", "--worker-class", "uvicorn_worker.UvicornWorker", "--workers", "2"]


class Floors:
    def __init__(self, url: str) -> None:
        self.servers = []
        try:
            for name, argv, port in (
                ("django-floor", DJANGO_FLOOR, DJANGO_FLOOR_PORT),
                ("bare-floor", BARE_FLOOR, BARE_FLOOR_PORT),
            ):
                log = open(RESULTS / f"{name}.log", "w")
                process = subprocess.Popen(
                    [str(BIN / "gunicorn"), *argv, "--bind", f"127.0.0.1:{port}", "--keep-alive", "30"],
                    cwd=ROOT,
                    env={**os.environ, "BENCH_DATABASE_URL": url, "PGAPPNAME": f"hitl-bench-{name}"},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
                self.servers.append((process, log))
                # Both answer an unknown request id with 404 once they are up.
                wait_until_answering(
                    process, name=name, log=log.name, port=port, path="/api/v1/approvals/apr_none", status=404
                )
        except SystemExit:
            self.stop()
            raise

    def stop(self) -> None:
        for process, log in self.servers:
            stop_group(process, log)
