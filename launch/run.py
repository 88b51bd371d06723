"""`make run`: the portal on this machine in one command, and Ctrl-C ends it cleanly (exit 0).

    python -m launch.run --url http://127.0.0.1:8000/ --serve "<the server's command>"

With no DATABASE_URL it starts PostgreSQL from the pgserver wheel, its data kept in .data/postgres
across runs (launch/embedded_postgres.py). Then: migrate, collectstatic, the demo workspace,
and three things at once — the demo webhook receiver (here, on a thread: it binds a free port, or
DEMO_WEBHOOK_PORT, before it says so, and make run stops if it cannot), the django-q2 cluster, and
the web server (`make serve`'s command, given by the Makefile). While it runs, .data/run.env tells
commands in another shell which database and keys it uses (launch/run_env.py).

Ctrl-C: the cluster and the server each run in a process group of their own, so the terminal's
SIGINT reaches this process alone, and each child is told to stop exactly once (a cluster told
twice said "has stopped" twice). At a terminal this process also takes the terminal's foreground,
so make itself never sees the Ctrl-C and ends as its recipe did: 0, no "Error 130".
"""

import argparse
import os
import signal
import subprocess
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from launch.children import start, stop_all

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / ".data" / "postgres"
RECEIPT_KEY = ROOT / ".data" / "receipt_key.pem"


class Stop(Exception):
    """Ctrl-C or SIGTERM: stop everything and exit 0."""


def _stop(*_) -> None:
    raise Stop


def say(message: str) -> None:
    print(f"[make run] {message}", flush=True)


@contextmanager
def terminal_foreground():
    """Be the terminal's foreground process group while running, then hand it back to make."""
    try:
        fd = os.open("/dev/tty", os.O_RDWR)
    except OSError:
        yield  # no terminal (CI, a test): the signal reaches whoever it is sent to
        return
    try:
        make_group = os.tcgetpgrp(fd)
        if make_group != os.getpgrp():  # started in the background (`make run &`): leave the terminal be
            yield
            return
        previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # a background group may not set it otherwise
        os.setpgid(0, 0)
        os.tcsetpgrp(fd, os.getpgrp())
        try:
            yield
        finally:
            os.tcsetpgrp(fd, make_group)
            signal.signal(signal.SIGTTOU, previous)
    finally:
        os.close(fd)


@contextmanager
def database():
    """DATABASE_URL as given, or the embedded PostgreSQL's, for this process and every child."""
    if os.environ.get("DATABASE_URL"):
        yield
        return
    from launch.embedded_postgres import EmbeddedPostgres

    say(f"no DATABASE_URL: starting PostgreSQL from the pgserver wheel, data kept in {DATA.relative_to(ROOT)}")
    port = int(os.environ.get("EMBEDDED_POSTGRES_PORT") or 0)  # unset: any free port
    with EmbeddedPostgres(DATA, port=port) as url:
        os.environ["DATABASE_URL"] = url
        say(f"PostgreSQL at {url}")
        yield


def receipt_key() -> None:
    """HITL_RECEIPT_KEY as given, or the one kept in .data/ (made on the first run): receipts made on
    one run still verify on the next."""
    if os.environ.get("HITL_RECEIPT_KEY"):
        return
    if not RECEIPT_KEY.exists():
        from approvals.receipts.keys import new_private_pem

        RECEIPT_KEY.parent.mkdir(parents=True, exist_ok=True)
        RECEIPT_KEY.touch(mode=0o600)
        RECEIPT_KEY.write_text(new_private_pem())
        say(f"made a receipt signing key in {RECEIPT_KEY.relative_to(ROOT)} (HITL_RECEIPT_KEY)")
    os.environ["HITL_RECEIPT_KEY"] = RECEIPT_KEY.read_text()


def manage(*args: str) -> None:
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, check=True, stdin=subprocess.DEVNULL)


def run(args: argparse.Namespace, stack: ExitStack, children: list[subprocess.Popen]) -> int:
    from launch.demo_receiver import listen, url_of

    port = int(os.environ.get("DEMO_WEBHOOK_PORT", "0"))
    try:
        receiver = listen(port, os.environ["HITL_DEMO_WEBHOOK_SECRET"])
    except OSError as error:
        say(
            f"the demo webhook receiver cannot listen on 127.0.0.1:{port} ({error.strerror}); "
            "set DEMO_WEBHOOK_PORT to a free port, or leave it unset for any free one. Stopping."
        )
        return 1
    stack.callback(receiver.shutdown)
    os.environ["HITL_DEMO_WEBHOOK"] = url_of(receiver)  # the demo's webhook contact names this variable
    # The receiver is on loopback, where the portal sends nothing a workspace aims unless the host allows
    # it (contacts/outbound.py): this demo host allows its own machine.
    allowed = os.environ.get("HITL_OUTBOUND_ALLOW", "")
    os.environ["HITL_OUTBOUND_ALLOW"] = ",".join(filter(None, [allowed, "127.0.0.1/32"]))
    say(f"demo webhook receiver listening on {url_of(receiver)}")

    receipt_key()
    from launch import run_env

    run_env.write()  # what a command in a second shell reads to reach this portal
    stack.callback(run_env.remove)
    manage("migrate", "--noinput", "--verbosity", "0")
    manage("collectstatic", "--noinput", "--verbosity", "0")
    manage("hitl", "demo", "--url", args.url)
    children.append(start([sys.executable, "manage.py", "qcluster"]))
    children.append(start(["sh", "-c", args.serve]))
    say("Ctrl-C stops it all.")
    while all(child.poll() is None for child in children):
        time.sleep(0.5)
    failed = next(child for child in children if child.poll() is not None)
    say(f"{failed.args[-1]!r} exited with {failed.returncode}; stopping the rest.")
    return 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="make run: the portal, its worker and a demo webhook receiver")
    parser.add_argument("--url", required=True, help="the portal's address, printed for the demo")
    parser.add_argument("--serve", required=True, help="the web server's shell command (make serve's)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGINT, _stop)
    signal.signal(signal.SIGTERM, _stop)
    children: list[subprocess.Popen] = []
    try:
        with ExitStack() as stack:
            stack.enter_context(terminal_foreground())
            stack.enter_context(database())
            stack.callback(stop_all, children)  # unwound first: the children stop before PostgreSQL does
            return run(args, stack, children)
    except Stop:
        return 0
    except subprocess.CalledProcessError as error:
        say(f"{' '.join(map(str, error.cmd[1:]))} failed (exit {error.returncode}).")
        return 1


if __name__ == "__main__":
    sys.exit(main())
