import os

import pytest
from django.db import connection

from .helpers import Api, ClientApi, make_member, make_token, make_workspace

# Playwright's sync API runs an event loop in the test thread; the ORM calls our tests make
# beside it are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def pytest_collection_modifyitems(config, items):
    for item in items:
        live = "live_server" in getattr(item, "fixturenames", ()) or item.get_closest_marker("live_http")
        if live or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.django_db(transaction=True))


@pytest.fixture(autouse=True)
def _postgres_when_required(request, django_db_blocker):
    """A test marked `postgres` fails (never skips) without PostgreSQL; CI demands it for all."""
    needs = request.node.get_closest_marker("postgres") or os.environ.get("HITL_REQUIRE_POSTGRES") == "1"
    if needs and connection.vendor != "postgresql":
        pytest.fail("This test needs PostgreSQL: set DATABASE_URL=postgres://… (CI always does).")


# Named users (healthchecks style): alice is an admin of acme, bob a reviewer of acme,
# charlie an admin of globex — an outsider to acme.


@pytest.fixture
def acme(db):
    return make_workspace("acme", plan="pro")


@pytest.fixture
def globex(db):
    return make_workspace("globex", plan="pro")


@pytest.fixture
def alice(acme):
    return make_member(acme, "alice@acme.test", "admin")


@pytest.fixture
def bob(acme):
    return make_member(acme, "bob@acme.test", "reviewer")


@pytest.fixture
def charlie(globex):
    return make_member(globex, "charlie@globex.test", "admin")


def _needs_real_http(request) -> bool:
    """Real HTTP only where it matters: a test marked live_http (long-poll, races) or already on live_server."""
    return bool(request.node.get_closest_marker("live_http")) or "live_server" in request.fixturenames


@pytest.fixture
def make_api(request):
    """An API caller for a token: the test client, or real HTTP against the live server when the test needs it."""

    def make(token: str | None = None) -> Api | ClientApi:
        if _needs_real_http(request):
            return Api(request.getfixturevalue("live_server").url, token)
        return ClientApi(token)

    return make


@pytest.fixture
def alice_api(make_api, acme, alice) -> Api | ClientApi:
    return make_api(make_token(acme, user=alice))


@pytest.fixture
def bob_api(make_api, acme, bob) -> Api | ClientApi:
    return make_api(make_token(acme, user=bob))


@pytest.fixture
def charlie_api(make_api, globex, charlie) -> Api | ClientApi:
    return make_api(make_token(globex, user=charlie))


@pytest.fixture
def engine_api(make_api, acme) -> Api | ClientApi:
    return make_api(make_token(acme, engine="support-engine"))


@pytest.fixture
def anonymous_api(make_api, db) -> Api | ClientApi:
    return make_api()
