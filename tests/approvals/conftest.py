"""The approvals tests' shared world: acme's support config, and the served portal with its callers."""

import pytest

from ..asgi import AsgiServer
from ..helpers import Api, make_token
from .engine_support import make_support_config


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


@pytest.fixture
def server(acme):
    with AsgiServer() as running:
        yield running


@pytest.fixture
def engine(server, acme) -> Api:
    return Api(server.url, make_token(acme, engine="support-engine"))


@pytest.fixture
def reviewer(server, acme, bob) -> Api:
    """Bob, a reviewer of acme, on the served portal."""
    return Api(server.url, make_token(acme, user=bob))


@pytest.fixture
def admin(server, acme, alice) -> Api:
    """Alice, acme's admin, on the served portal."""
    return Api(server.url, make_token(acme, user=alice))
