"""`make test` on a machine without PostgreSQL: run a command against a throwaway server.

`python -m tests.throwaway_postgres CMD…` starts PostgreSQL from the pip-installed `pgserver`
wheel (its binaries, nothing from the system) in a temporary directory, listening on a free
port of 127.0.0.1, runs CMD with DATABASE_URL pointing at it, then stops it and deletes it.
Tests that start gunicorn or a django-q2 cluster reach it over TCP like any other server.

PostgreSQL refuses to run as root: as root, the server runs as the unprivileged `pgserver`
system user (created once, as pgserver itself does). CI sets DATABASE_URL and never gets here.
"""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

with warnings.catch_warnings():  # pgserver asks platformdirs for a runtime dir it never uses here
    warnings.simplefilter("ignore")
    from pgserver._commands import POSTGRES_BIN_PATH

SYSTEM_USER = "pgserver"
# A throwaway cluster needs no durability: the tests run faster without it.
FAST = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_as(user: str | None, *args: str) -> None:
    subprocess.run(
        [str(POSTGRES_BIN_PATH / args[0]), *args[1:]],
        check=True,
        user=user,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        timeout=120,
    )


def _prepare_for_root(directory: Path) -> str:
    """The unprivileged user the server runs as, able to read the binaries and own `directory`."""
    import pwd
    import stat

    from pgserver.utils import ensure_folder_permissions, ensure_prefix_permissions, ensure_user_exists

    entry = ensure_user_exists(SYSTEM_USER)
    ensure_prefix_permissions(directory)
    ensure_prefix_permissions(POSTGRES_BIN_PATH)
    readable = stat.S_IRGRP | stat.S_IROTH
    ensure_folder_permissions(POSTGRES_BIN_PATH, readable | stat.S_IXGRP | stat.S_IXOTH)
    ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", readable)
    os.chown(directory, entry.pw_uid, entry.pw_gid)
    return pwd.getpwuid(entry.pw_uid).pw_name


def main(command: list[str]) -> int:
    if not command:
        print("usage: python -m tests.throwaway_postgres COMMAND [ARGS…]", file=sys.stderr)
        return 2
    directory = Path(tempfile.mkdtemp(prefix="hitl-test-postgres-"))
    user = _prepare_for_root(directory) if os.geteuid() == 0 else None
    data, port = directory / "data", free_port()
    started = False
    try:
        _run_as(user, "initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--no-sync")
        options = f"-h 127.0.0.1 -p {port} -k {directory} {FAST}"
        _run_as(user, "pg_ctl", "-D", str(data), "-l", str(directory / "server.log"), "-o", options, "-w", "start")
        started = True
        url = f"postgres://postgres@127.0.0.1:{port}/hitl"
        print(f"Throwaway PostgreSQL (pgserver wheel) at {url}; it is deleted after this run.", flush=True)
        return subprocess.call(command, env={**os.environ, "DATABASE_URL": url})
    except subprocess.CalledProcessError as error:
        print(f"Could not start the throwaway PostgreSQL: {error.stderr.decode(errors='replace')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if started:
            _run_as(user, "pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
