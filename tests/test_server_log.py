"""The server as `make serve` runs it says nothing alarming while it starts and serves a page and a static file.

A warning at start teaches people to ignore the log (issue 41: "StreamingHttpResponse must consume
synchronous iterators", logged whenever WhiteNoise served a file under ASGI).
"""

import json
import re
import subprocess
import sys
import time

import pytest
import requests

from audit.services import audit_append

from .asgi import ROOT, AsgiServer
from .helpers import make_token
from .loopback import subprocess_env

ALARMING = re.compile(r"warning|traceback|error|exception", re.IGNORECASE)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("debug", ["true", "false"])
def test_it_serves_a_page_and_a_static_file_with_a_quiet_log(tmp_path, debug):
    env = {"LOG_LEVEL": "INFO", "DEBUG": debug, "SECRET_KEY": "server-log-" + "k" * 50}
    if debug == "false":  # as deployed: the hashed files collectstatic writes (README: Deploying)
        subprocess.run(
            [sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"],
            cwd=ROOT,
            env=subprocess_env(**env),
            check=True,
        )
    log = tmp_path / "server.log"
    with AsgiServer(log=log, **env) as server:
        page = requests.get(f"{server.url}/login/", timeout=30)
        css = requests.get(server.url + _static(page.text, "portal.css"), timeout=30)
        script = requests.get(server.url + _static(page.text, "portal.js"), timeout=30)
        # Read while it serves: what it says when stopped is gunicorn's own shutdown, not ours.
        deadline = time.monotonic() + 10
        while " /static/js/portal." not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.05)
        said = log.read_text()

    assert page.status_code == 200
    assert css.status_code == 200 and "text/css" in css.headers["Content-Type"] and len(css.content) > 1000
    assert script.status_code == 200 and len(script.content) > 100
    assert "GET /static/css/portal." in said  # the access log is there: the log was read, not missed
    alarming = [line for line in said.splitlines() if ALARMING.search(line)]
    assert not alarming, "\n".join(alarming)


def _static(page: str, name: str) -> str:
    """The address the page itself gives a static file (with its hash when DEBUG is off)."""
    stem, ext = name.rsplit(".", 1)
    return re.search(rf'"(/static/[^"]*/{stem}(?:\.\w+)?\.{ext})"', page).group(1)


@pytest.mark.django_db(transaction=True)
def test_the_audit_export_streams_whole_through_the_asgi_server(tmp_path, acme, alice):
    """The export reads a database cursor as it streams: each chunk is read in the request's thread."""
    for n in range(500):
        audit_append(workspace_id=acme.pk, actor="system", action="test.stream", object=f"o{n}", data={"n": n})
    token = make_token(acme, user=alice)
    log = tmp_path / "server.log"
    with AsgiServer(log=log, LOG_LEVEL="INFO") as server:
        response = requests.get(f"{server.url}/api/v1/audit", headers={"Authorization": f"Bearer {token}"}, timeout=60)
        said = log.read_text()

    assert response.status_code == 200
    records = [json.loads(line) for line in response.text.splitlines()]
    assert [r["object"] for r in records if r["action"] == "test.stream"] == [f"o{n}" for n in range(500)]
    assert not [line for line in said.splitlines() if ALARMING.search(line)]
