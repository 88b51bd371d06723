"""The newcomer's `make run`: it prints what to type next, and Ctrl-C ends it cleanly."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path

import fasteners
import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.management import call_command

from tests.loopback import database_url, free_port

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def one_make_run_at_a_time():
    """`make run` is one per checkout: it shares `.data/run.env` with a second shell, and the last one to stop
    removes it. Tests on other xdist workers wait here rather than start a second one beside it."""
    (ROOT / ".data").mkdir(exist_ok=True)
    with fasteners.InterProcessLock(ROOT / ".data" / "make-run-tests.lock"):
        yield


def demo() -> str:
    out = StringIO()
    call_command("hitl", "demo", "--url", "http://127.0.0.1:8000/", stdout=out)
    return out.getvalue()


def test_the_demo_prints_runnable_lines_the_first_time_and_the_next(db):
    python = os.path.relpath(sys.executable)

    first, second = demo(), demo()

    assert "Engine key (shown once): hitl_" in first
    assert f"Try: {python} manage.py hitl demo-engine --url http://127.0.0.1:8000/ --key hitl_" in first
    assert "The demo workspace is already loaded." in second
    assert f"{python} manage.py hitl token create --workspace acme --engine demo-engine" in second
    assert f"Try: {python} manage.py hitl demo-engine" in second
    admin = get_user_model().objects.get(email="admin@acme.test")
    assert admin.is_staff and admin.is_superuser  # the README sends staff to Django admin


def _processes(group: int, *, alive_only: bool = False) -> str:
    """Each process of the group, with the signals it ignores and blocks: what a hang needs explained.

    alive_only leaves out zombies: a killed child's exit may not yet have been collected."""
    listing = subprocess.run(
        ["ps", "-o", "pid=,ppid=,stat=,wchan:20=,args=", "--sort", "pid", "-g", str(group)],
        capture_output=True,
        text=True,
    ).stdout
    rows = []
    for line in listing.splitlines():
        if alive_only and line.split()[2].startswith("Z"):
            continue
        try:
            status = Path(f"/proc/{line.split()[0]}/status").read_text()
        except OSError:
            status = ""
        masks = " ".join(row for row in status.splitlines() if row.startswith(("SigIgn", "SigBlk")))
        rows.append(f"{line[:160]}  {masks}")
    return "\n".join(rows)


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_ends_make_run_cleanly():
    port = free_port()
    # INFO: the cluster's "has stopped" is what says how often it was told to stop.
    env = {**os.environ, "DATABASE_URL": database_url(), "LOG_LEVEL": "INFO"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    run = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group: Ctrl-C is a SIGINT to all of it
    )
    # Read all along, so that a full pipe never stalls it, and so that a hang names who is left.
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True)
    reader.start()
    leftovers = ""
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if requests.get(f"http://127.0.0.1:{port}/login/", timeout=10).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.3)
        else:
            pytest.fail("make run never answered")
        # Ctrl-C once the cluster is up, as a person would: one stopped mid-start says nothing.
        _wait_for(lambda: "Q Cluster" in "".join(lines) and "running." in "".join(lines))

        os.killpg(run.pid, signal.SIGINT)
        try:
            run.wait(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail(f"make run still running 30 s after Ctrl-C:\n{_processes(run.pid)}\n{''.join(lines)[-3000:]}")
        leftovers = _processes(run.pid, alive_only=True)
    finally:
        if run.poll() is None or leftovers:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    # Nothing it started may outlive it (a cluster worker once did, holding the terminal's output).
    assert leftovers == ""
    reader.join(timeout=10)
    output = "".join(lines)

    assert "Segmentation fault" not in output
    assert "Error 130" not in output and "Interrupt" not in output, output[-3000:]
    assert output.count("has stopped.") == 1, output[-3000:]  # the cluster was told to stop once
    assert run.returncode in (0, -signal.SIGINT)  # make itself got the group's SIGINT; its recipe ended with 0
    assert "[make run] demo webhook receiver listening on http://127.0.0.1:" in output
    assert f"{os.path.relpath(ROOT / '.venv/bin/python', ROOT)} manage.py hitl demo-engine" in output
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/login/", timeout=2)


def _wait_for(condition, seconds: float = 60, said=lambda: "") -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {seconds} s\n{said()}")
        time.sleep(0.2)


def _run_env(**env: str) -> dict[str, str]:
    environment = {**os.environ, "DATABASE_URL": database_url(), "LOG_LEVEL": "INFO", **env}
    environment.pop("DJANGO_SETTINGS_MODULE", None)
    return environment


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_at_a_terminal_ends_make_run_with_0_and_no_error():
    """As a person sees it: make run at a terminal, then Ctrl-C typed into that terminal."""
    import fcntl
    import pty
    import termios

    port = free_port()
    master, slave = pty.openpty()

    def own_terminal() -> None:  # what a shell does for the command it runs: a session on the terminal
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    run = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"PORT={port}"],
        cwd=ROOT,
        env=_run_env(),
        stdin=slave,
        stdout=slave,
        stderr=slave,
        preexec_fn=own_terminal,
    )
    os.close(slave)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            chunks.append(chunk)

    threading.Thread(target=read, daemon=True).start()
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            try:
                if requests.get(f"http://127.0.0.1:{port}/login/", timeout=10).status_code == 200:
                    break
            except requests.RequestException:
                time.sleep(0.3)
        else:
            pytest.fail("make run never answered:\n" + b"".join(chunks).decode(errors="replace")[-3000:])
        _wait_for(lambda: b"Q Cluster" in b"".join(chunks) and b"running." in b"".join(chunks))
        os.write(master, b"\x03")  # Ctrl-C
        code = run.wait(timeout=30)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
        time.sleep(0.2)
        os.close(master)
    output = b"".join(chunks).decode(errors="replace")

    assert code == 0, output[-3000:]
    assert "Error" not in output.split("Ctrl-C stops it all.")[-1].replace("Error while closing socket", "")
    assert output.count("has stopped.") == 1, output[-3000:]


def test_make_run_says_so_and_stops_when_the_receiver_cannot_listen():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        result = subprocess.run(
            ["make", "--no-print-directory", "run", f"PORT={free_port()}", f"DEMO_WEBHOOK_PORT={port}"],
            cwd=ROOT,
            env={**env, "DATABASE_URL": "postgres://postgres@127.0.0.1:1/unused"},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode != 0
    assert f"the demo webhook receiver cannot listen on 127.0.0.1:{port}" in result.stdout
    assert "set DEMO_WEBHOOK_PORT to a free port" in result.stdout
    assert "listening on" not in result.stdout and "Starting gunicorn" not in result.stdout + result.stderr


def test_the_receiver_says_it_listens_only_once_it_does():
    from launch.demo_receiver import listen, url_of

    server = listen(0, "whsec_" + "A" * 32)
    try:
        port = server.server_address[1]
        assert url_of(server) == f"http://127.0.0.1:{port}/hook"
        with pytest.raises(OSError):
            listen(port, "whsec_" + "A" * 32)
        assert requests.post(url_of(server), data=b"{}", timeout=5).status_code == 401  # unsigned
    finally:
        server.shutdown()


def test_the_embedded_postgres_keeps_its_data_across_runs(tmp_path):
    import psycopg

    from launch.embedded_postgres import EmbeddedPostgres

    folder = tmp_path / "postgres"
    with EmbeddedPostgres(folder) as url:
        with psycopg.connect(url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
            conn.execute("CREATE TABLE kept (n int)")
            conn.execute("INSERT INTO kept VALUES (42)")
    with EmbeddedPostgres(folder) as url:  # started again, on another port, from the same folder
        with psycopg.connect(url.replace("postgres://", "postgresql://")) as conn:
            assert conn.execute("SELECT n FROM kept").fetchone() == (42,)


# -- every printed line, as printed, in a second shell -----------------------------------------------


def _second_shell() -> dict[str, str]:
    """A new terminal's environment: nothing of make run's, no DATABASE_URL, no virtualenv activated."""
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TERM", "USER", "SHELL", "TMPDIR")
    return {name: os.environ[name] for name in keep if name in os.environ}


def _readme_block(marker: str) -> str:
    import re

    readme = (ROOT / "README.md").read_text()
    return re.search(rf"<!-- {marker} -->\s*```sh\n(.*?)```", readme, re.S)[1]


def _shell(line: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-euo", "pipefail", "-c", line],
        cwd=ROOT,
        env={**_second_shell(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.django_db(transaction=True)
def test_every_line_make_run_and_the_readme_print_works_as_printed_in_a_second_shell():
    import re

    port = free_port()
    run = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"PORT={port}"],
        cwd=ROOT,
        env=_run_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True).start()
    output = lambda: "".join(lines)  # noqa: E731
    engine = None
    try:
        _wait_for(lambda: "Q Cluster" in output() and "running." in output(), 120)
        _wait_for(lambda: _answers(f"http://127.0.0.1:{port}/login/"), 60)
        url = f"http://localhost:{port}/"
        assert f"HITL Portal is starting at {url}" in output()  # where passkeys work
        key = re.search(r"Engine key \(shown once\): (hitl_\S+)", output())[1]
        config = re.search(r"--config (cfg_\w+)", output())[1]
        try_line = re.search(r"Try: (.*)", output())[1]

        # The Try: line, as printed: the scripted engine pauses at each gated call…
        engine = subprocess.Popen(
            ["bash", "-c", try_line],
            cwd=ROOT,
            env={**_second_shell(), "PYTHONUNBUFFERED": "1"},  # line by line, as at a terminal
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        said: list[str] = []
        threading.Thread(target=lambda: said.extend(engine.stdout), daemon=True).start()
        approve = re.search(r"`(\.venv/bin/python manage\.py hitl approve \$APR[^`]*)`", _readme())[1]
        decided: list[str] = []
        for _ in range(3):  # the delete, the refund, the token cap
            _wait_for(
                lambda: len(re.findall(r"paused: (apr_\w+)", "".join(said))) > len(decided),
                60,
                lambda: "".join(said) + output()[-3000:],
            )
            apr = re.findall(r"paused: (apr_\w+)", "".join(said))[len(decided)]
            # … and the README's line decides it from the shell, the same portal.
            result = _shell(approve, APR=apr)
            assert result.returncode == 0, result.stdout + result.stderr
            decided.append(apr)
        assert engine.wait(timeout=60) == 0, "".join(said)
        assert "finished." in "".join(said), "".join(said)
        # Deciding from the CLI wakes the sender at once: the demo's webhook hears of it in seconds.
        first = decided[0]
        _wait_for(lambda: f"dev.hitl.approval.decided {first}" in output(), 10, output)

        # The README's curl example, with the key and config make run printed.
        result = _shell(_readme_block("curl-example"), KEY=key, CFG=config, HITL=f"http://localhost:{port}")
        assert result.returncode == 0, result.stdout + result.stderr
        assert result.stdout.count("\n{") >= 2  # each step's answer on a line of its own
        apr = re.search(r'"id":\s*"(apr_\w+)"', result.stdout)[1]
        assert _shell(approve, APR=apr).returncode == 0

        # The line the demo prints for a new engine key, once the first is spent.
        new_key = re.search(r"A new one: (.*)", demo())[1]
        result = _shell(new_key)
        assert result.returncode == 0 and "hitl_" in result.stdout, result.stdout + result.stderr
    finally:
        if engine is not None and engine.poll() is None:
            engine.kill()
        os.killpg(run.pid, signal.SIGINT)
        try:
            run.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
    assert not (ROOT / ".data" / "run.env").exists()  # gone with make run: a later command is not misled


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=5).status_code == 200
    except requests.RequestException:
        return False
