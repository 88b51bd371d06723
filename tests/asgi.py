"""The real ASGI server in a subprocess, for tests of what only it does (async long-poll, the LISTEN hub).

pytest-django's live_server is WSGI and threaded: it cannot show a wait that holds no thread, a
client hanging up, or the per-process LISTEN connection. So: the production server (`make serve`'s
command) on a free loopback port, against the test database.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import requests

from tests.loopback import database_url, free_port

ROOT = Path(__file__).resolve().parent.parent


def server_command(port: int, workers: int = 1) -> list[str]:
    """What `make serve` runs (its SERVE line, as make prints it), on our port: the deployed server."""
    line = subprocess.run(
        [
            "make",
            "-s",
            "-n",
            "-o",
            ".venv/.runtime",
            "-o",
            ".venv/.installed",
            "serve",
            "HOST=127.0.0.1",
            f"PORT={port}",
            f"WORKERS={workers}",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # The virtualenv make names is this interpreter's own (.venv); say so whatever the checkout's path.
    line = line.replace(".venv/bin/", f"{Path(sys.executable).parent}/")
    return ["sh", "-c", line]


class AsgiServer:
    """`with AsgiServer(**env) as server:` … `server.url`; stopped (its whole process group) on exit.

    Its output goes to `log` when given (a test reading what the server said), else test-artifacts/.
    """

    def __init__(
        self,
        *,
        database: str | None = None,
        workers: int = 1,
        port: int | None = None,
        log: Path | None = None,
        **env: str,
    ) -> None:
        self.port, self.workers, self.log_path = port or free_port(), workers, log
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        self.env.update(
            DATABASE_URL=database or database_url(), DJANGO_SETTINGS_MODULE="hitl_portal.settings", LOG_LEVEL="WARNING"
        )
        self.env.update(env)
        self.process: subprocess.Popen | None = None

    def __enter__(self) -> "AsgiServer":
        log = self.log_path or ROOT / "test-artifacts" / "asgi-server.log"
        self.log = open(log, "a") if log.parent.is_dir() else subprocess.DEVNULL
        self.process = subprocess.Popen(
            server_command(self.port, self.workers),
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the ASGI server exited with {self.process.returncode}")
            try:
                if requests.get(self.url + "/login/", timeout=5).status_code == 200:
                    return self
            except (requests.ConnectionError, requests.Timeout):  # not up yet, or slow to start on a busy machine
                time.sleep(0.1)
        self.__exit__()
        raise RuntimeError("the ASGI server did not answer within 30 s")

    def __exit__(self, *exc) -> None:
        import signal

        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=15)
        if self.log is not subprocess.DEVNULL:
            self.log.close()
