"""PostgreSQL from the pip-installed `pgserver` wheel (its binaries, nothing from the system).

`make run` with no DATABASE_URL keeps one in a data folder across runs (.data/postgres,
git-ignored): `EmbeddedPostgres(data, keep=True)`. `make test` starts a throwaway one per run
and deletes it after (tests/throwaway_postgres.py). Either listens on a free port of 127.0.0.1,
(or the one given), so the web server, the django-q2 cluster and the tests reach it over TCP like
any other server.

PostgreSQL refuses to run as root: as root, the server runs as the unprivileged `pgserver`
system user (created once, as pgserver itself does), which then owns the data folder.
"""

import os
import socket
import subprocess
import warnings
from pathlib import Path

with warnings.catch_warnings():  # pgserver asks platformdirs for a runtime dir it never uses here
    warnings.simplefilter("ignore")
    from pgserver._commands import POSTGRES_BIN_PATH

SYSTEM_USER = "pgserver"
DATABASE = "hitl"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class EmbeddedPostgres:
    """`with EmbeddedPostgres(folder) as url:` … PostgreSQL is stopped on leaving; its data stays in folder.

    `options` are server settings for this start (the tests' throwaway one trades durability for speed);
    `port` pins the port it listens on (make run: EMBEDDED_POSTGRES_PORT), else any free one.
    """

    def __init__(self, folder: Path, *, options: str = "", port: int = 0) -> None:
        self.folder = folder.resolve()
        self.port = port  # 0: any free port
        self.data = self.folder / "data"
        self.options = options
        self.user: str | None = None
        self.started = False

    def __enter__(self) -> str:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.user = self._prepare_for_root() if os.geteuid() == 0 else None
        if not (self.data / "PG_VERSION").exists():
            self._run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-sync")
        port = self.port or free_port()
        options = f"-h 127.0.0.1 -p {port} -k {self.folder} {self.options}".strip()
        log = str(self.folder / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-l", log, "-o", options, "-w", "start")
        self.started = True
        self._create_database(port)
        return f"postgres://postgres@127.0.0.1:{port}/{DATABASE}"

    def __exit__(self, *exc) -> None:
        if self.started:
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")
            self.started = False

    def _create_database(self, port: int) -> None:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [DATABASE]).fetchone():
                conn.execute(f'CREATE DATABASE "{DATABASE}"')

    def _run(self, *args: str) -> None:
        subprocess.run(
            [str(POSTGRES_BIN_PATH / args[0]), *args[1:]],
            check=True,
            user=self.user,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            timeout=120,
        )

    def _prepare_for_root(self) -> str:
        """The unprivileged user the server runs as, able to read the binaries and own the folder."""
        import pwd
        import stat

        from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

        entry = ensure_user_exists(SYSTEM_USER)
        ensure_prefix_permissions(self.folder)
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        readable = stat.S_IRGRP | stat.S_IROTH
        ensure_folder_permissions(POSTGRES_BIN_PATH, readable | stat.S_IXGRP | stat.S_IXOTH)
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", readable)
        os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        return pwd.getpwuid(entry.pw_uid).pw_name
