"""The TypeScript client (clients/typescript) against the portal as `make serve` runs it.

Its own tests are Node's (`npm test`: node --test); this runs them against the live server with a
workspace of their own — an admin, a reviewer, an engine key and a published config — and fails with
Node's output when any of them fails. The Makefile's test target runs `npm ci` first when
node_modules is missing or older than the lockfile.
"""

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from ..helpers import make_config, make_rule, make_token, publish

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"

pytestmark = pytest.mark.live_http


def test_the_typescript_client_passes_its_node_tests(live_server, acme, alice, bob):
    assert (PACKAGE / "node_modules").is_dir(), "run `npm ci` in clients/typescript (make test does)"
    config = make_config(acme, "Support agent", pass_information_level="full")
    make_rule(config, kind="delete", match="*", allow_edit=True, message="Deletes need a second pair of eyes.")
    make_rule(config, kind="mcp_server", match="mcp_billing", allow_edit=True, order=20)
    publish(config, alice)
    env = {
        **os.environ,
        "HITL_URL": live_server.url,
        "HITL_CONFIG_ID": config.public_id,
        "HITL_ENGINE_KEY": make_token(acme, engine="ts-engine"),
        "HITL_ADMIN_TOKEN": make_token(acme, user=alice),
        "HITL_REVIEWER_TOKEN": make_token(acme, user=bob),
    }
    # Its own process group: a test that hangs (a Claude Code session, say) is ended with everything it started.
    npm = subprocess.Popen(
        [shutil.which("npm") or "npm", "test"],
        cwd=PACKAGE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = npm.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        os.killpg(npm.pid, signal.SIGKILL)
        output, _ = npm.communicate()
        pytest.fail(f"npm test ran past 900 s:\n{output[-20000:]}")
    finally:
        try:  # whatever of the group outlived npm
            os.killpg(npm.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert npm.returncode == 0, f"npm test failed ({npm.returncode}):\n{output[-20000:]}"
