"""The per-key cap under a WSGI server (the live test server, a gthread deploy): same 429, same Retry-After."""

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from ..helpers import error_of
from .engine_support import gate_body, make_support_config

pytestmark = pytest.mark.live_http  # a long-poll holds a server thread: real HTTP


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


def test_a_thread_server_refuses_one_wait_more_than_the_cap_with_429(settings, engine_api, support):
    settings.HITL_MAX_WAITS_PER_KEY = 1
    first, second = (
        engine_api.post("/api/v1/approvals", json=gate_body(support, run_id=f"run_{n}")).json()["id"] for n in (1, 2)
    )
    with ThreadPoolExecutor(1) as pool:
        held = pool.submit(engine_api.get, f"/api/v1/approvals/{first}?wait=3")
        time.sleep(1)
        refused = engine_api.get(f"/api/v1/approvals/{second}?wait=3")
        assert refused.status_code == 429
        assert error_of(refused)["code"] == "too_many_waits"
        assert refused.headers["Retry-After"] == "5"
        assert held.result(timeout=20).status_code == 200
    assert engine_api.get(f"/api/v1/approvals/{second}?wait=0.2").status_code == 200
