"""The newcomer's `make run`: it prints what to type next, and Ctrl-C ends it cleanly."""

import os
import signal
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path

import pytest
import requests
from django.contrib.auth import get_user_model
from django.core.management import call_command

from tests.loopback import database_url, free_port

ROOT = Path(__file__).resolve().parents[1]


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


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_ctrl_c_ends_make_run_cleanly():
    port = free_port()
    env = {**os.environ, "DATABASE_URL": database_url(), "LOG_LEVEL": "WARNING"}
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
    assert f"{os.path.relpath(ROOT / '.venv/bin/python', ROOT)} manage.py hitl demo-engine" in output
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/login/", timeout=2)
