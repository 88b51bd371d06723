"""Deploying as docs/deploy.md says: its check --deploy line in a clean shell, `make serve` from the
reader's virtualenv, and the cluster under systemd's stop (a SIGTERM to its process group)."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.loopback import subprocess_env

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = Path(sys.executable).parent


def _deploy_block(marker: str) -> str:
    text = (ROOT / "docs" / "deploy.md").read_text()
    return re.search(rf"<!-- {marker} -->\s*```sh\n(.*?)```", text, re.S)[1].strip()


def _clean_shell() -> dict[str, str]:
    """A new login shell with the virtualenv activated: no DATABASE_URL, nothing of the test run's."""
    keep = {name: os.environ[name] for name in ("HOME", "LANG", "USER", "TMPDIR") if name in os.environ}
    return {**keep, "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin", "VIRTUAL_ENV": str(VENV_BIN.parent)}


def test_the_check_deploy_line_of_the_deploy_docs_is_clean_in_a_new_shell():
    line = _deploy_block("check-deploy")

    result = subprocess.run(["bash", "-c", line], cwd=ROOT, env=_clean_shell(), capture_output=True, text=True)

    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_env_sets_what_production_reads():
    settings = dict(
        line.split("=", 1)
        for line in (ROOT / "docs" / "production.env").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    )
    # SITE_URL is read only with DEBUG on; the address links use in production is HITL_BASE_URL.
    assert "SITE_URL" not in settings
    assert settings["HITL_BASE_URL"].startswith("https://") and settings["DEBUG"] == "false"
    assert "HITL_RECEIPT_KEY" in (ROOT / "docs" / "deploy.md").read_text()


def _make_serve(tmp_path: Path, **env: str) -> str:
    """What `make serve` would run, requirements.txt newer than any stamp (as after a `git pull`)."""
    return subprocess.run(
        ["make", "-s", "-n", "-W", "requirements.txt", "serve", "PORT=8123"],
        cwd=ROOT,
        env={**_clean_shell(), **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_make_serve_serves_from_the_virtualenv_the_reader_installed_into(tmp_path):
    venv = tmp_path / "venv"

    commands = _make_serve(tmp_path, VIRTUAL_ENV=str(venv))

    assert commands.strip().splitlines()[-1].startswith(f'ulimit -n "$(ulimit -Hn)"; exec {venv}/bin/gunicorn ')
    assert "pip" not in commands and "venv .venv" not in commands and ".venv/bin" not in commands


def test_make_serve_without_a_virtualenv_makes_the_checkouts_own(tmp_path):
    env = _clean_shell()
    del env["VIRTUAL_ENV"]
    commands = subprocess.run(
        ["make", "-s", "-n", "-W", "requirements.txt", "serve"], cwd=ROOT, env=env, capture_output=True, text=True
    ).stdout

    assert "-m venv .venv" in commands and "exec .venv/bin/gunicorn " in commands


def _wait_for_line(log: Path, text: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while text not in log.read_text():
        if time.monotonic() > deadline:
            pytest.fail(f"no {text!r} after {seconds} s:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)


@pytest.mark.django_db(transaction=True)
def test_the_cluster_stops_within_10_s_of_a_sigterm_to_its_process_group(tmp_path):
    """What systemd's stop, `kill -- -PGID` or a container's stop sends: the unit's ExecStart, stopped."""
    unit = (ROOT / "deploy" / "hitl-cluster.service").read_text()
    command = re.search(r"^ExecStart=\S+/bin/python (.*)$", unit, re.M)[1].split()
    assert "KillMode=mixed" in unit
    log = tmp_path / "cluster.log"
    with log.open("w") as out:
        cluster = subprocess.Popen(
            [sys.executable, *command],
            cwd=ROOT,
            env=subprocess_env(LOG_LEVEL="INFO"),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_for_line(log, "running.", 90)
        family = psutil.Process(cluster.pid).children(recursive=True)  # qcluster, its sentinel, workers
        signalled = time.monotonic()
        os.killpg(cluster.pid, signal.SIGTERM)
        try:
            cluster.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail(f"still running 10 s after SIGTERM to its group:\n{log.read_text()[-3000:]}")
        stopped = time.monotonic() - signalled
    finally:
        if cluster.poll() is None:
            os.killpg(cluster.pid, signal.SIGKILL)
            cluster.wait()
    assert stopped < 10
    assert cluster.returncode == 0
    assert log.read_text().count("has stopped.") == 1  # stopped in order, once
    assert [p.pid for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE] == []
