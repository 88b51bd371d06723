"""Every database connection taken on any thread goes back: error pages must not empty the pool.

Django renders a 404/403/400 page on a worker thread of the event loop's (`response_for_exception`,
thread_sensitive=False), where the page's context processor reads the session; nothing handed that
pooled connection back, so sixteen such pages emptied a process's pool for good (edge/threads.py).
"""

import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import requests

from tests.asgi import AsgiServer

from .conftest import ROOT, raw_connection, subprocess_env

POOL_SIZE = 4
APP_NAME = "hitl-faults-pool"


def error_page(url: str, index: int) -> int:
    kind = index % 3
    if kind == 0:  # 404, with a session cookie the context processor looks up
        response = requests.get(f"{url}/no-such-page-{index}", headers={"Cookie": f"sessionid=garbage{index}"})
    elif kind == 1:  # 403: a form posted without its CSRF token
        response = requests.post(f"{url}/login/", data={"username": "x", "password": "y"}, timeout=30)
    else:  # 400: a Host the portal does not serve, on a page
        response = requests.get(f"{url}/login/", headers={"Host": f"evil{index}.example"}, timeout=30)
    return response.status_code


# As deployed: DEBUG off, so the error pages are the portal's templates (with their context processors).
PRODUCTION = {"DEBUG": "false", "SECRET_KEY": "faults-" + "k" * 50}


def test_500_error_pages_leave_the_pool_full_and_healthz_answering(world):
    env = subprocess_env(**PRODUCTION)
    subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput", "-v0"], cwd=ROOT, env=env, check=True)
    with AsgiServer(HITL_DB_POOL_SIZE=str(POOL_SIZE), PGAPPNAME=APP_NAME, **PRODUCTION) as server:
        with ThreadPoolExecutor(16) as pool:
            statuses = list(pool.map(lambda i: error_page(server.url, i), range(500)))
        assert sorted(set(statuses)) == [400, 403, 404]

        # The pool is whole: twice its size of requests that each need a connection, at once, all answered
        # well within the pool's 20 s wait for a free connection.
        headers = {"Authorization": f"Bearer {world['bob_token']}"}
        started = time.monotonic()
        with ThreadPoolExecutor(2 * POOL_SIZE) as pool:
            answers = list(
                pool.map(
                    lambda _: requests.get(f"{server.url}/api/v1/approvals", headers=headers, timeout=30).status_code,
                    range(2 * POOL_SIZE),
                )
            )
        assert answers == [200] * (2 * POOL_SIZE)
        assert time.monotonic() - started < 10
        assert requests.get(f"{server.url}/healthz", timeout=30).status_code == 200
        with raw_connection() as conn:
            held = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s AND datname = current_database()",
                [APP_NAME],
            ).fetchone()[0]
        assert held <= POOL_SIZE  # the pool's own connections, no more
