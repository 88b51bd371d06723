"""PgBouncer and nginx for the tests, started from launch/proxies.py's configurations (what docs/deploy.md
shows) on free ports, each in a temporary directory of its own, stopped with its process group."""

import secrets
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from launch.proxies import start_nginx, start_pgbouncer
from tests.loopback import ARTIFACTS, free_port, stop


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def _up(process: subprocess.Popen, port: int, what: str) -> None:
    deadline = time.monotonic() + 15
    while not _listening(port):
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            raise RuntimeError(f"{what} did not listen on {port} (exit status {process.returncode})")
        time.sleep(0.05)


def _log(name: str):
    return open(ARTIFACTS / name, "a") if ARTIFACTS.is_dir() else subprocess.DEVNULL


class PgBouncer:
    """`with PgBouncer(database_url) as bouncer:` … `bouncer.url`: the same database through PgBouncer
    (transaction mode), its user logging in with a password of the test's own (SCRAM)."""

    def __init__(self, database_url: str) -> None:
        self.direct = urlsplit(database_url)
        self.port, self.password = free_port(), secrets.token_urlsafe(12)
        self.url = f"postgres://{self.direct.username}:{self.password}@127.0.0.1:{self.port}{self.direct.path}"

    def __enter__(self) -> "PgBouncer":
        self.workdir = Path(tempfile.mkdtemp(prefix="hitl-pgbouncer-"))
        self.workdir.chmod(0o755)  # read by PgBouncer once it has dropped to `nobody` (as root)
        self.log = _log("pgbouncer.log")
        self.process = start_pgbouncer(
            self.workdir,
            port=self.port,
            postgres_host=self.direct.hostname or "127.0.0.1",
            postgres_port=self.direct.port or 5432,
            user=self.direct.username or "postgres",
            password=self.password,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        _up(self.process, self.port, "PgBouncer")
        return self

    def __exit__(self, *exc) -> None:
        stop(self.process)
        if self.log is not subprocess.DEVNULL:
            self.log.close()


class Nginx:
    """`with Nginx([port_a, port_b]) as proxy:` … `proxy.url`: nginx in front of those loopback ports."""

    def __init__(self, node_ports: list[int]) -> None:
        self.node_ports = node_ports
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "Nginx":
        self.workdir = Path(tempfile.mkdtemp(prefix="hitl-nginx-"))
        self.log = _log("nginx.log")
        nodes = [f"127.0.0.1:{port}" for port in self.node_ports]
        self.process = start_nginx(
            self.workdir, listen=f"127.0.0.1:{self.port}", nodes=nodes, stdout=self.log, stderr=subprocess.STDOUT
        )
        _up(self.process, self.port, "nginx")
        return self

    def __exit__(self, *exc) -> None:
        stop(self.process)
        if self.log is not subprocess.DEVNULL:
            self.log.close()
