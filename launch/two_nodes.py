"""`make cluster`: a two-node deployment on this machine, as docs/deploy.md describes one, for anyone to try.

    python -m launch.two_nodes [--port 8000] [--nodes 8001,8002] [--pgbouncer 6432]

PgBouncer (transaction mode) in front of DATABASE_URL's PostgreSQL; two portal nodes (`make serve`'s
command each, on --nodes) connected through it, their wait hubs LISTENing direct; the django-q2
cluster through it too; nginx on --port in front of both nodes. The proxies' configurations are
launch/proxies.py's, written to .data/cluster/. Migrations run first, direct.

Ctrl-C (or SIGTERM): every process is told to stop once — a node answers its held waits and exits,
as in a rolling restart — and whatever is left after children.STOP_GRACE_SECONDS is killed; exit 0.
"""

import argparse
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from launch.children import start, stop_all
from launch.proxies import start_nginx, start_pgbouncer

ROOT = Path(__file__).resolve().parent.parent
WORKDIR = ROOT / ".data" / "cluster"


class Stop(Exception):
    pass


def _stop(*_) -> None:
    raise Stop


def say(message: str) -> None:
    print(f"[make cluster] {message}", flush=True)


def serve_command(port: int, workers: int) -> list[str]:
    """`make serve`'s command line on `port`, as make would run it."""
    line = subprocess.run(
        ["make", "-s", "-n", "-o", ".venv/.runtime", "serve", "HOST=127.0.0.1", f"PORT={port}", f"WORKERS={workers}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return ["sh", "-c", line]


def through_pgbouncer(direct: str, port: int, password: str) -> str:
    parts = urlsplit(direct)
    netloc = f"{parts.username or 'postgres'}:{password}@127.0.0.1:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make cluster", description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8000, help="nginx's port (the address people and engines use)")
    parser.add_argument("--nodes", default="8001,8002", help="the two nodes' ports")
    parser.add_argument("--pgbouncer", type=int, default=6432, help="PgBouncer's port")
    parser.add_argument("--workers", type=int, default=1, help="uvicorn workers per node")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    direct = os.environ.get("DATABASE_URL", "")
    if not direct:
        say("DATABASE_URL is not set: give it the PostgreSQL database the cluster should use.")
        return 2
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    database = urlsplit(direct)
    # PgBouncer logs in to PostgreSQL with the password its clients give it: DATABASE_URL's, else one of its own.
    password = database.password or secrets.token_urlsafe(16)
    pooled = through_pgbouncer(direct, args.pgbouncer, password)
    node_ports = [int(port) for port in args.nodes.split(",")]
    children: list[subprocess.Popen] = []
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"], cwd=ROOT, check=True)
        children.append(
            start_pgbouncer(
                WORKDIR / "pgbouncer",
                port=args.pgbouncer,
                postgres_host=database.hostname or "127.0.0.1",
                postgres_port=database.port or 5432,
                user=database.username or "postgres",
                password=password,
            )
        )
        env = {
            **os.environ,
            "DATABASE_URL": pooled,
            "HITL_DB_TRANSACTION_POOLER": "true",
            "HITL_LISTEN_DATABASE_URL": direct,
            "HITL_TRUSTED_PROXIES": "127.0.0.1",
        }
        for port in node_ports:
            children.append(start(serve_command(port, args.workers), env=env))
        children.append(start([sys.executable, "-m", "launch.cluster"], env=env))
        nodes = [f"127.0.0.1:{port}" for port in node_ports]
        children.append(start_nginx(WORKDIR / "nginx", listen=f"127.0.0.1:{args.port}", nodes=nodes))
        say(f"http://127.0.0.1:{args.port}/ — nginx → nodes {', '.join(nodes)} → PgBouncer :{args.pgbouncer}")
        say("Ctrl-C stops it all.")
        while all(child.poll() is None for child in children):
            time.sleep(0.5)
        say("a process exited on its own: stopping the rest")
        return 1
    except Stop:
        return 0
    finally:
        stop_all(children)


if __name__ == "__main__":
    sys.exit(main())
