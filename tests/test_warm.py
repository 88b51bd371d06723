"""A started worker has done Django's once-only work: its first request imports and compiles nothing.

Without the warm-up (common/warm.py), the first request a worker served after a start or a
restart imported the URLconf and every view, and compiled its templates, while every request
arriving meanwhile waited behind it.
"""

import json
import subprocess
import sys
import textwrap

import pytest

from tests.asgi import ROOT
from tests.loopback import subprocess_env

# A fresh interpreter: the ASGI app's lifespan startup, then one page, recording what that page imports.
FIRST_PAGE = textwrap.dedent(
    """
    import asyncio, json, sys
    from pathlib import Path

    from hitl_portal.asgi import application
    from django.template import engines

    imported = []

    class Recorder:
        def find_spec(self, name, path=None, target=None):
            imported.append(name)
            return None

    def get(path):
        return {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
                "headers": [(b"host", b"127.0.0.1")], "scheme": "http", "server": ("127.0.0.1", 80),
                "client": ("127.0.0.1", 5000), "http_version": "1.1", "asgi": {"version": "3.0"}, "root_path": ""}

    async def main():
        lifespan = asyncio.Queue()
        started, stopped = asyncio.Event(), asyncio.Event()
        async def lifespan_send(message):
            (started if message["type"] == "lifespan.startup.complete" else stopped).set()
        await lifespan.put({"type": "lifespan.startup"})
        task = asyncio.ensure_future(application({"type": "lifespan"}, lifespan.get, lifespan_send))
        await started.wait()

        cached = set(engines["django"].engine.template_loaders[0].get_template_cache)
        own = {p.relative_to("templates").as_posix() for p in Path("templates").rglob("*") if p.is_file()}

        sys.meta_path.insert(0, Recorder())
        statuses = []
        bodies = [{"type": "http.request", "body": b"", "more_body": False}]
        async def receive():
            if bodies:
                return bodies.pop()
            await asyncio.Event().wait()  # the client stays until the page is sent
        async def send(message):
            if message["type"] == "http.response.start":
                statuses.append(message["status"])
        await application(get("/login/"), receive, send)
        sys.meta_path.pop(0)

        await lifespan.put({"type": "lifespan.shutdown"})
        await stopped.wait()
        await task
        print(json.dumps({"status": statuses[0], "imported": imported, "not_compiled": sorted(own - cached)}))

    asyncio.run(main())
    """
)


def run_fresh(script: str) -> dict:
    """`script` in a fresh interpreter; what its last line printed, as JSON."""
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=subprocess_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.django_db
def test_a_started_worker_serves_its_first_page_without_importing_or_compiling():
    result = run_fresh(FIRST_PAGE)
    assert result["status"] == 200
    assert result["not_compiled"] == []
    assert result["imported"] == []


# A fresh interpreter: the ASGI app's lifespan startup, then as many long-lived objects as thousands of
# waits hold, counting the collector's full collections meanwhile.
MANY_WAITS = textwrap.dedent(
    """
    import asyncio, gc, json

    thresholds = gc.get_threshold()
    from hitl_portal.asgi import application

    async def main():
        lifespan = asyncio.Queue()
        started = asyncio.Event()
        async def lifespan_send(message):
            if message["type"] == "lifespan.startup.complete":
                started.set()
        await lifespan.put({"type": "lifespan.startup"})
        task = asyncio.ensure_future(application({"type": "lifespan"}, lifespan.get, lifespan_send))
        await started.wait()

        full = []
        gc.callbacks.append(lambda phase, info: phase == "stop" and info["generation"] == 2 and full.append(1))
        waits = [{"future": asyncio.get_running_loop().create_future(), "headers": [("host", str(i))]}
                 for i in range(50_000)]
        print(json.dumps({"waits": len(waits), "full_collections": len(full), "frozen": gc.get_freeze_count(),
                          "thresholds_kept": gc.get_threshold() == thresholds}))
        task.cancel()

    asyncio.run(main())
    """
)


@pytest.mark.django_db
def test_a_started_worker_has_frozen_what_startup_built():
    """Every full collection walks every object in the process while its event loop serves nothing:
    what startup built (modules, URL tables, templates) is never garbage, so never walked again. The
    collector's thresholds are Python's own."""
    result = run_fresh(MANY_WAITS)
    assert result["waits"] == 50_000
    assert result["frozen"] > 10_000
    assert result["thresholds_kept"]
