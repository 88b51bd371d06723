"""What `make run` shares with a second shell: the environment it gives the portal, in .data/run.env.

`make run` writes the file once its database is up and deletes it when it stops. The settings read it
when DATABASE_URL is not set, so every command `make run` and the README print —
`.venv/bin/python manage.py hitl …` — works as printed in another terminal: the same database, the
same receipt key, the same demo contacts' variables. A file left by a `make run` that no longer runs
(killed, the machine rebooted) is ignored: it names the process that wrote it.

The file is shell syntax too: `set -a; . .data/run.env; set +a` gives a shell the same environment.
Standard library only: the settings import this before Django is set up.
"""

import os
import shlex
from pathlib import Path

PATH = Path(__file__).resolve().parent.parent / ".data" / "run.env"
OWNER = "MAKE_RUN_PID"
# What a command in a second shell needs to act as the portal make run started: its database, the
# key its receipts are signed with, its public address, and what the demo's contacts name.
SHARED = (
    "DATABASE_URL",
    "HITL_BASE_URL",
    "HITL_RECEIPT_KEY",
    "HITL_DEMO_WEBHOOK",
    "HITL_DEMO_WEBHOOK_SECRET",
    "HITL_DEMO_REVIEWER_EMAIL",
    "EMAIL_BACKEND",
)


def write(path: Path = PATH) -> None:
    """This process's values of SHARED, readable by this user alone (it holds the receipt key)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{OWNER}={os.getpid()}"]
    lines += [f"{name}={shlex.quote(os.environ[name])}" for name in SHARED if os.environ.get(name)]
    temporary = path.with_suffix(".tmp")
    temporary.touch(mode=0o600)
    temporary.write_text("\n".join(lines) + "\n")
    temporary.replace(path)


def remove(path: Path = PATH) -> None:
    """On make run's way out; only its own file (a second make run may have written a newer one)."""
    if read(path).get(OWNER) == str(os.getpid()):
        path.unlink(missing_ok=True)


def read(path: Path = PATH) -> dict[str, str]:
    try:
        text = path.read_text()
    except OSError:
        return {}
    return dict(token.split("=", 1) for token in shlex.split(text) if "=" in token)


def running(values: dict[str, str]) -> bool:
    try:
        os.kill(int(values.get(OWNER, "")), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # alive, and another user's
        return True
    return True


def load(path: Path = PATH) -> bool:
    """Set what the environment does not already say from a running make run's file; True if there was one."""
    values = read(path)
    if not values or not running(values):
        return False
    for name in SHARED:
        if name in values:
            os.environ.setdefault(name, values[name])
    return True
