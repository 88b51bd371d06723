"""SQLite (the `make run` default) has no NOTIFY: under the ASGI server a wait polls instead, and still ends
at once when decided, and with 401 when its key is revoked."""

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from ..asgi import ROOT, AsgiServer
from ..helpers import Api

WORLD = """
import json
from django.conf import settings
settings.PASSWORD_HASHERS = ["tests.helpers.QuickPBKDF2PasswordHasher"]
from tests.helpers import make_member, make_token, make_workspace
from tests.approvals.engine_support import gate_body, make_support_config
acme = make_workspace("acme", plan="pro")
alice = make_member(acme, "alice@acme.test", "admin")
bob = make_member(acme, "bob@acme.test", "reviewer")
support = make_support_config(acme, alice)
print(json.dumps({"engine": make_token(acme, engine="support-engine"), "bob": make_token(acme, user=bob),
                  "body": gate_body(support)}))
"""

REVOKE = """
from workspaces.models import ApiToken
from workspaces.services import token_revoke
token_revoke(token=ApiToken.objects.get(name="support-engine"))
"""


def manage(database: str, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
    env.update(DATABASE_URL=database, DJANGO_SETTINGS_MODULE="hitl_portal.settings", LOG_LEVEL="WARNING")
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")  # one server for both tests (a migrate, a world, a boot): the revoking one runs last
def sqlite_portal(tmp_path_factory):
    database = f"sqlite:///{tmp_path_factory.mktemp('sqlite') / 'portal.sqlite3'}"
    manage(database, "migrate", "--verbosity", "0")
    world = json.loads(manage(database, "shell", "--no-imports", "-c", WORLD).strip().splitlines()[-1])
    with AsgiServer(database=database) as server:
        yield server, world, database


def test_a_wait_on_sqlite_ends_soon_after_the_decision(sqlite_portal):
    server, world, _ = sqlite_portal
    engine, bob = Api(server.url, world["engine"]), Api(server.url, world["bob"])
    apr = engine.post("/api/v1/approvals", json=world["body"]).json()["id"]
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(engine.get, f"/api/v1/approvals/{apr}?wait=20")
        time.sleep(1)
        assert bob.post(f"/api/v1/approvals/{apr}/decision", json={"decision": "approve"}).status_code == 200
        decided_at = time.monotonic()
        answer = waiting.result(timeout=30)
    assert answer.status_code == 200 and answer.json()["status"] == "approved"
    assert time.monotonic() - decided_at < 3  # a poll every 0.2 s, not the 20 s offered


def test_a_wait_on_sqlite_ends_with_401_when_its_key_is_revoked(sqlite_portal):
    server, world, database = sqlite_portal
    engine = Api(server.url, world["engine"])
    apr = engine.post("/api/v1/approvals", json=world["body"]).json()["id"]
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(engine.get, f"/api/v1/approvals/{apr}?wait=20")
        time.sleep(1)
        manage(database, "shell", "--no-imports", "-c", REVOKE)
        revoked_at = time.monotonic()
        answer = waiting.result(timeout=30)
    assert answer.status_code == 401
    assert time.monotonic() - revoked_at < 3
