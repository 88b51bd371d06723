"""`make test` without DATABASE_URL: a throwaway PostgreSQL from the pgserver wheel, started and deleted."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import os, psycopg
url = os.environ["DATABASE_URL"].replace("postgres://", "postgresql://").rsplit("/", 1)[0] + "/postgres"
with psycopg.connect(url) as conn:
    print("server:", conn.execute("SHOW server_version").fetchone()[0])
    print("data:", conn.execute("SHOW data_directory").fetchone()[0])
"""


def test_it_runs_a_command_on_a_throwaway_postgres_and_deletes_it_after():
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}

    result = subprocess.run(
        [sys.executable, "-m", "tests.throwaway_postgres", sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert result.returncode == 0, result.stderr
    assert "Throwaway PostgreSQL (pgserver wheel) at postgres://postgres@127.0.0.1:" in result.stdout
    assert "server: 16." in result.stdout
    data = Path(result.stdout.split("data:", 1)[1].strip())
    assert data.name == "data" and data.parent.name.startswith("hitl-test-postgres-")
    assert not data.parent.exists()  # stopped and deleted


def test_it_passes_the_commands_exit_status_on():
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}

    result = subprocess.run(
        [sys.executable, "-m", "tests.throwaway_postgres", sys.executable, "-c", "raise SystemExit(3)"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )

    assert result.returncode == 3
