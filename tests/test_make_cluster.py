"""`make cluster` (launch/two_nodes.py): nginx, two nodes, PgBouncer and the django-q2 cluster on this machine;
a request answered through nginx; Ctrl-C stops every one of its processes within 10 s. And the proxies'
configurations docs/deploy.md shows are the ones rendered."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from launch.proxies import nginx_conf, pgbouncer_ini
from tests.loopback import database_url, free_port

ROOT = Path(__file__).resolve().parents[1]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        return "\nState:\tZ" not in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False


@pytest.mark.django_db(transaction=True)
def test_make_cluster_serves_through_nginx_and_ctrl_c_stops_it_all():
    port, nodes, bouncer = free_port(), [free_port(), free_port()], free_port()
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(DATABASE_URL=database_url(), LOG_LEVEL="WARNING")
    launcher = subprocess.Popen(
        [sys.executable, "-m", "launch.two_nodes", "--port", str(port), "--nodes", ",".join(map(str, nodes))]
        + ["--pgbouncer", str(bouncer)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline, answered = time.monotonic() + 90, None
        while time.monotonic() < deadline and answered is None:
            assert launcher.poll() is None, f"make cluster exited with {launcher.returncode}"
            try:
                response = requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5)
                answered = response if response.status_code == 200 else None
            except requests.RequestException:
                pass
            time.sleep(0.2)
        assert answered is not None, "nothing answered through nginx"
        processes = _descendants(launcher.pid)
        assert len(processes) >= 8  # PgBouncer, nginx and its workers, two gunicorns and their workers, the cluster

        started = time.monotonic()
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(timeout=10) == 0
        while any(map(_alive, processes)) and time.monotonic() - started < 10:
            time.sleep(0.1)
        assert not [pid for pid in processes if _alive(pid)], "processes left after Ctrl-C"
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
            launcher.wait()


def _block_after(text: str, marker: str) -> str:
    """The fenced block that follows `marker` in docs/deploy.md."""
    found = re.search(re.escape(marker) + r".*?```[a-z]*\n(.*?)```", text, re.S)
    assert found, marker
    return found.group(1)


def test_the_proxies_configurations_docs_show_are_the_ones_rendered():
    docs = (ROOT / "docs" / "deploy.md").read_text()
    assert (ROOT / "deploy" / "nginx.conf").read_text() == nginx_conf() == _block_after(docs, "deploy/nginx.conf:")
    assert (
        (ROOT / "deploy" / "pgbouncer.ini").read_text()
        == pgbouncer_ini()
        == _block_after(docs, "deploy/pgbouncer.ini:")
    )
