"""The two proxies of a two-node deployment: nginx in front of the portal's nodes, PgBouncer in front
of PostgreSQL. docs/deploy.md shows deploy/nginx.conf and deploy/pgbouncer.ini, which are what
`nginx_conf()` and `pgbouncer_ini()` render with their defaults (tests/test_deploy_proxies.py);
`make cluster` (launch/two_nodes.py) and the fault tests render them on their own ports.

nginx: a wait is a long-poll of up to 30 s, so reads may take long; a node that refuses or resets a
connection, or answers 502/503 (restarting), is skipped for the other at once, and never marked
down (`max_fails=0`): a restarted node gets requests again as soon as it accepts them. Only
idempotent requests are sent again by nginx itself; the clients ask again for the rest.

PgBouncer: transaction mode, so the portal runs with HITL_DB_TRANSACTION_POOLER=true and its
wait hub LISTENs on a direct connection (HITL_LISTEN_DATABASE_URL, hitl_portal/databases.py).
"""

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NGINX = "/usr/sbin/nginx"
PGBOUNCER = "/usr/sbin/pgbouncer"

NGINX_CONF = """\
# nginx in front of two portal nodes (docs/deploy.md); run as `nginx -p <dir> -c nginx.conf -e stderr`,
# paths relative to <dir>. Each waiting engine holds two connections here (its own and the node's).
worker_processes {workers};
daemon off;
pid nginx.pid;
error_log stderr warn;
# Two connections a waiting engine, per worker process (one per core): 30,000 engines on two workers.
worker_rlimit_nofile 65536;
events {{
    worker_connections 32768;
}}
http {{
    access_log off;
    client_body_temp_path tmp/body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    upstream hitl_nodes {{
{servers}
        # Connections to the nodes are kept for the next request (an engine asks again every 30 s at
        # most); closed here before the nodes' own keep-alive (30 s) would close them under a request.
        keepalive 256;
        keepalive_timeout 20s;
    }}
    server {{
{listens}
        client_max_body_size 1m;
        location / {{
            proxy_pass http://hitl_nodes;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_connect_timeout 2s;
            proxy_read_timeout 75s;
            proxy_send_timeout 30s;
            proxy_next_upstream error timeout http_502 http_503;
            proxy_next_upstream_tries 2;
        }}
    }}
}}
"""

PGBOUNCER_INI = """\
; PgBouncer in front of PostgreSQL (docs/deploy.md): transaction mode. The portal connects with
; HITL_DB_TRANSACTION_POOLER=true; its wait hub LISTENs on HITL_LISTEN_DATABASE_URL, direct.
[databases]
* = host={postgres_host} port={postgres_port}

[pgbouncer]
listen_addr = {listen_host}
listen_port = {listen_port}
unix_socket_dir =
auth_type = scram-sha-256
auth_file = {auth_file}
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
ignore_startup_parameters = extra_float_digits
"""


def nginx_conf(
    *,
    listen: str | Sequence[str] = "127.0.0.1:8000",
    nodes: Sequence[str] = ("127.0.0.1:8001", "127.0.0.1:8002"),
    workers: int | str = "auto",
) -> str:
    """`listen`: one address or several (each its own port range for the clients' connections);
    `workers`: nginx's worker processes, one per core unless open files per process say more."""
    servers = "\n".join(f"        server {node} max_fails=0;" for node in nodes)
    addresses = [listen] if isinstance(listen, str) else list(listen)
    listens = "\n".join(f"        listen {address} reuseport;" for address in addresses)
    return NGINX_CONF.format(listens=listens, servers=servers, workers=workers)


def pgbouncer_ini(
    *,
    listen_host: str = "127.0.0.1",
    listen_port: int = 6432,
    postgres_host: str = "127.0.0.1",
    postgres_port: int = 5432,
    auth_file: str = "/etc/pgbouncer/userlist.txt",
) -> str:
    return PGBOUNCER_INI.format(
        listen_host=listen_host,
        listen_port=listen_port,
        postgres_host=postgres_host,
        postgres_port=postgres_port,
        auth_file=auth_file,
    )


def start_nginx(
    workdir: Path, *, listen: str | Sequence[str], nodes: Sequence[str], workers: int | str = "auto", **popen
) -> subprocess.Popen:
    """nginx in the foreground, its config, pid and temporary files in `workdir`."""
    (workdir / "tmp").mkdir(parents=True, exist_ok=True)
    (workdir / "nginx.conf").write_text(nginx_conf(listen=listen, nodes=nodes, workers=workers))
    command = [NGINX, "-p", f"{workdir}/", "-c", "nginx.conf", "-e", "stderr"]
    return subprocess.Popen(command, cwd=workdir, stdin=subprocess.DEVNULL, process_group=0, **popen)


def start_pgbouncer(
    workdir: Path, *, port: int, postgres_host: str, postgres_port: int, user: str, password: str, **popen
) -> subprocess.Popen:
    """PgBouncer in the foreground on `port`; `user` logs in to it with `password` (SCRAM), and it to
    PostgreSQL as that user, with the same password when PostgreSQL asks for one."""
    workdir.mkdir(parents=True, exist_ok=True)
    auth_file = workdir / "userlist.txt"
    auth_file.write_text(f'"{user}" "{password}"\n')
    auth_file.chmod(0o600)
    ini = workdir / "pgbouncer.ini"
    ini.write_text(
        pgbouncer_ini(
            listen_port=port, postgres_host=postgres_host, postgres_port=postgres_port, auth_file=str(auth_file)
        )
    )
    # PgBouncer refuses to run as root (a container, CI): it then drops to `nobody`, after reading its files.
    as_nobody = ["-u", "nobody"] if os.geteuid() == 0 else []
    return subprocess.Popen(
        [PGBOUNCER, *as_nobody, str(ini)], cwd=workdir, stdin=subprocess.DEVNULL, process_group=0, **popen
    )
