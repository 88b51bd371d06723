"""CI's production-install step: install the portal as the README's deploy section says, and run it.

    python3 .ci/production_check.py            (DATABASE_URL: a PostgreSQL server it may create a database on)

In a fresh virtualenv (outside the checkout's .venv) it runs `pip install -r requirements.txt`
exactly as README.md, "Deploying", says, and then, from that virtualenv alone:

1. `manage.py check --deploy --fail-level WARNING` with docs/production.env's settings;
2. `--help` of every `hitl` subcommand, each in its own process;
3. an import of every module of every app (what `make test` would never notice missing);
4. the portal as deployed — `make serve` from that virtualenv (gunicorn with uvicorn workers) and
   `python -m launch.cluster` — with DEBUG off, the demo workspace loaded, README.md's curl example run
   as written against it, and the webhook that example's request notifies delivered by the cluster
   to a receiver on loopback, its Standard Webhooks signature checked.

Exit 0 when all of it holds; otherwise 1, naming the step. `make test` keeps its own environment.
"""

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECRET = "whsec_" + base64.b64encode(b"production-check-signing-secret!").decode()


def step(title: str) -> None:
    print(f"\n== {title}", flush=True)


def fail(message: str) -> None:
    print(f"PRODUCTION CHECK FAILED: {message}", flush=True)
    sys.exit(1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def deploy_commands() -> list[str]:
    """The install commands of README.md's deploy section (its block marked `deploy-install`)."""
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- deploy-install -->\s*```sh\n(.*?)```", readme, re.S)
    if not match:
        fail("README.md has no ```sh block after <!-- deploy-install -->")
    return [line for line in match[1].splitlines() if line.strip() and not line.lstrip().startswith("#")]


def curl_example() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- curl-example -->\s*```sh\n(.*?)```", readme, re.S)
    if not match:
        fail("README.md has no ```sh block after <!-- curl-example -->")
    return match[1]


def receipt_key() -> str:
    """A fresh Ed25519 private key as PEM (RFC 8410's PKCS#8 form: a fixed prefix and 32 random bytes),
    made with the standard library: this script runs before any virtualenv has cryptography."""
    der = bytes.fromhex("302e020100300506032b657004220420") + secrets.token_bytes(32)
    return "-----BEGIN PRIVATE KEY-----\n" + base64.b64encode(der).decode() + "\n-----END PRIVATE KEY-----\n"


def production_env(database_url: str, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PYTHON"))}
    for line in (ROOT / "docs" / "production.env").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, value = line.split("=", 1)
            env[key] = value
    env.update(
        SECRET_KEY=secrets.token_urlsafe(50),
        DATABASE_URL=database_url,
        HITL_BASE_URL=f"http://127.0.0.1:{port}",
        HITL_RECEIPT_KEY=receipt_key(),  # required with DEBUG off (docs/receipts.md)
    )
    return env


def plain_http(env: dict[str, str], port: int) -> dict[str, str]:
    """Production settings served over plain loopback HTTP: no TLS proxy in front of this check."""
    return {
        **env,
        "ALLOWED_HOSTS": "127.0.0.1",
        "CSRF_TRUSTED_ORIGINS": f"http://127.0.0.1:{port}",
        "SECURE_SSL_REDIRECT": "false",
        "SECURE_COOKIES": "false",
        "SECURE_PROXY_SSL": "false",
    }


RUNTIME_ROLE = "hitl_production_app"


def create_database(url: str) -> tuple[str, str]:
    """A fresh database, and its URL as the owner (who migrates) and as RUNTIME_ROLE (what runs: docs/deploy.md)."""
    base, _, _ = url.rpartition("/")
    name = "hitl_production_check"
    admin = base.replace("postgres://", "postgresql://") + "/postgres"
    subprocess.run(["psql", admin, "-qc", f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"], check=True)
    subprocess.run(["psql", admin, "-qc", f"DROP ROLE IF EXISTS {RUNTIME_ROLE}"], check=True)
    subprocess.run(["psql", admin, "-qc", f"CREATE ROLE {RUNTIME_ROLE} LOGIN"], check=True)
    subprocess.run(["psql", admin, "-qc", f"CREATE DATABASE {name}"], check=True)
    scheme, _, rest = base.partition("://")
    host = rest.rpartition("@")[2]
    return f"{base}/{name}", f"{scheme}://{RUNTIME_ROLE}@{host}/{name}"


class Receiver:
    """A customer's webhook endpoint on loopback: keeps each delivery whose signature holds."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        received = self.events

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                key = base64.b64decode(SECRET.removeprefix("whsec_"))
                signed = f"{self.headers['webhook-id']}.{self.headers['webhook-timestamp']}.".encode() + body
                expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
                offered = self.headers.get("webhook-signature", "").split()
                if f"v1,{expected}" in offered:
                    received.append(json.loads(body))
                self.send_response(200 if f"v1,{expected}" in offered else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def main() -> None:
    database = os.environ.get("DATABASE_URL")
    if not database:
        fail("set DATABASE_URL to a PostgreSQL server this check may create a database on")
    work = Path(tempfile.mkdtemp(prefix="hitl-production-"))
    venv = work / "venv"
    processes: list[subprocess.Popen] = []
    try:
        step("a fresh virtualenv, installed as README.md's deploy section says")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        path = f"{venv / 'bin'}:{os.environ['PATH']}"
        for command in deploy_commands():
            print(f"$ {command}", flush=True)
            in_venv = {**os.environ, "PATH": path, "VIRTUAL_ENV": str(venv)}
            subprocess.run(["bash", "-ec", command], cwd=ROOT, check=True, env=in_venv)
        python = str(venv / "bin" / "python")
        port = free_port()
        owner_url, runtime_url = create_database(database)
        env = {**production_env(runtime_url, port), "PATH": path}

        def manage(*args: str, **extra: str) -> subprocess.CompletedProcess:
            return subprocess.run(
                [python, "manage.py", *args], cwd=ROOT, env={**env, **extra}, capture_output=True, text=True
            )

        step("manage.py check --deploy with docs/production.env")
        result = manage("check", "--deploy", "--database", "default", "--fail-level", "WARNING")
        print(result.stdout + result.stderr, end="")
        if result.returncode:
            fail("manage.py check --deploy")

        step("every `hitl` subcommand's --help")
        listing = subprocess.run(
            [python, "-c", LIST_SUBCOMMANDS], cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )
        if listing.returncode:
            fail(f"could not list the hitl subcommands:\n{listing.stderr}")
        subcommands = [line.split() for line in listing.stdout.splitlines() if line.strip()]
        for words in subcommands:
            result = manage("hitl", *words, "--help")
            print(f"hitl {' '.join(words)} --help → {result.returncode}", flush=True)
            if result.returncode or "usage:" not in result.stdout:
                fail(f"hitl {' '.join(words)} --help:\n{result.stdout}{result.stderr}")
        if len(subcommands) < 8:
            fail(f"only {len(subcommands)} hitl subcommands found")

        step("an import of every module of every app")
        result = subprocess.run([python, "-c", IMPORT_ALL], cwd=ROOT, env=env, capture_output=True, text=True)
        print(result.stdout + result.stderr, end="")
        if result.returncode:
            fail("a module does not import with requirements.txt alone")

        step("the portal as deployed: migrate, the demo, gunicorn + uvicorn workers, the cluster")
        receiver = Receiver()
        # The receiver is on loopback: allowed as a host allows an internal receiver (contacts/outbound.py).
        served = {**plain_http(env, port), "HITL_DEMO_WEBHOOK": receiver.url, "HITL_DEMO_WEBHOOK_SECRET": SECRET}
        served["HITL_OUTBOUND_ALLOW"] = "127.0.0.1/32"
        served.update(
            HITL_DEMO_REVIEWER_EMAIL="reviewer@acme.test", EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend"
        )
        as_owner = {"DATABASE_URL": owner_url, "HITL_DB_RUNTIME_ROLE": RUNTIME_ROLE}
        for args, extra in ((["migrate", "--noinput", "-v0"], as_owner), (["collectstatic", "--noinput", "-v0"], {})):
            result = manage(*args, **{**served, **extra})
            if result.returncode:
                fail(f"manage.py {' '.join(args)}:\n{result.stdout}{result.stderr}")
        demo = manage("hitl", "demo", "--url", f"http://127.0.0.1:{port}/", **served)
        key = re.search(r"Engine key \(shown once\): (hitl_\S+)", demo.stdout)
        config = re.search(r"--config (cfg_\w+)", demo.stdout)
        if demo.returncode or not key or not config:
            fail(f"hitl demo:\n{demo.stdout}{demo.stderr}")
        # As README.md and docs/deploy.md say: `make serve` from the virtualenv the reader is in (it
        # installs nothing), and the cluster under its supervisor.
        server_command = ["make", "--no-print-directory", "serve", "HOST=127.0.0.1", f"PORT={port}", "WORKERS=2"]
        in_venv = {**served, "VIRTUAL_ENV": str(venv)}
        for command in (server_command, [python, "-m", "launch.cluster"]):
            processes.append(subprocess.Popen(command, cwd=ROOT, env=in_venv, start_new_session=True))
        wait_for(lambda: status(f"http://127.0.0.1:{port}/login/") == 200, "the server's login page", 60)

        step("README.md's curl example, run as written")
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", curl_example()],
            cwd=work,
            env={**served, "HITL": f"http://127.0.0.1:{port}", "KEY": key[1], "CFG": config[1]},
            capture_output=True,
            text=True,
            timeout=120,
        )
        print(result.stdout[-2000:] + result.stderr[-2000:], end="")
        if result.returncode or '"status":"pending"' not in result.stdout.replace(" ", ""):
            fail("README.md's curl example did not register a pending request")

        step("the webhook, delivered by the cluster")
        requested = "dev.hitl.approval.requested"
        wait_for(lambda: any(e.get("type") == requested for e in receiver.events), "a signed delivery", 60)
        print(f"received {[e.get('type') for e in receiver.events]} at {receiver.url}")
        print("\nPRODUCTION CHECK PASSED", flush=True)
    except subprocess.CalledProcessError as error:
        fail(f"{error.cmd} exited with {error.returncode}")
    finally:
        # Stopped as a service manager stops them (SIGTERM to the group): launch.cluster stops its
        # qcluster, which runs in a process group of its own and would outlive a SIGKILL to this one.
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        shutil.rmtree(work, ignore_errors=True)


def status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except OSError:
        return None


def wait_for(condition, what: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.25)
    fail(f"gave up after {seconds:.0f} s waiting for {what}")


# Run inside the production virtualenv: the `hitl` command's subcommands, one per line ("token create").
LIST_SUBCOMMANDS = """
import argparse, django, os
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hitl_portal.settings")
django.setup()
from django.core.management import load_command_class
command = load_command_class("workspaces", "hitl")
parser = command.create_parser("manage.py", "hitl")

def walk(parser, prefix):
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not actions:
        print(" ".join(prefix))
    for action in actions:
        for name, sub in action.choices.items():
            walk(sub, [*prefix, name])

walk(parser, [])
"""

IMPORT_ALL = """
import importlib, os, pkgutil, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hitl_portal.settings")
import django
django.setup()
from django.apps import apps
# The project's packages: the settings' own, the shared library, the launchers and the edge, and every
# installed app that lives in this checkout.
packages = ["hitl_portal", "common", "launch", "edge"]
packages += [c.name for c in apps.get_app_configs() if c.path.startswith(os.getcwd())]
count = 0
for name in packages:
    package = importlib.import_module(name)
    for module in pkgutil.walk_packages(package.__path__, prefix=name + "."):
        importlib.import_module(module.name)
        count += 1
print(f"imported {count} modules of {len(packages)} packages")
"""


if __name__ == "__main__":
    main()
