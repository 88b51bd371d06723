import os
import time
from collections.abc import Iterator

import pytest
from django.db import connection, connections, transaction
from django.test import TransactionTestCase
from django.test.utils import override_settings

from .helpers import Api, ClientApi, make_member, make_token, make_workspace
from .loopback import LOOPBACK_FAKES_ALLOWED, mailbox, receiver  # noqa: F401 — fixtures for every test (the fake servers on loopback)

# Playwright's sync API runs an event loop in the test thread; the ORM calls our tests make
# beside it are still synchronous and safe.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
# The tests' receipt key (docs/receipts.md): made for them, never a deployment's. Set in the environment so
# every live server the tests start signs with it too.
TEST_RECEIPT_KEY = """-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIFt6S0CMNDWMp5iVURRUWN4ZoT1GpoQ00VM/tNRb8xEQ
-----END PRIVATE KEY-----"""
os.environ.setdefault("HITL_RECEIPT_KEY", TEST_RECEIPT_KEY)
# The fake receivers on loopback (tests/loopback.py), allowed as a host allows an internal receiver; in the
# environment too, for the servers and clusters the tests start.
os.environ.setdefault("HITL_OUTBOUND_ALLOW", LOOPBACK_FAKES_ALLOWED)


@pytest.fixture(scope="session", autouse=True)
def _loopback_fakes_allowed():
    """The allowance, also where the settings were read before this module set the environment."""
    with override_settings(HITL_OUTBOUND_ALLOW=[LOOPBACK_FAKES_ALLOWED]):
        yield


@pytest.fixture(scope="session", autouse=True)
def _receipt_key():
    """The key, also where the settings were read before this module set the environment."""
    from approvals.receipts.keys import receipt_keys_reset

    with override_settings(HITL_RECEIPT_KEY=os.environ["HITL_RECEIPT_KEY"]):
        receipt_keys_reset()
        yield
    receipt_keys_reset()


@pytest.fixture(scope="session", autouse=True)
def _quick_password_hashing():
    """Every alice, bob and charlie costs a password hash: 1,000 iterations here (tests/helpers.py says why)."""
    with override_settings(PASSWORD_HASHERS=["tests.helpers.QuickPBKDF2PasswordHasher"]):
        yield


# Commits on the test database need not wait for the disk (about 5 ms each on this shared machine,
# against a fraction of one): PostgreSQL still makes each commit visible to every other connection at
# once, which is all a test can observe; only a crash of PostgreSQL itself could lose the last ones.
ASYNC_COMMIT = "-c synchronous_commit=off"


@pytest.fixture(scope="session")
def django_db_modify_db_settings(django_db_modify_db_settings_parallel_suffix) -> None:
    """The test process's connections (migrations included) commit asynchronously."""
    settings = connections["default"].settings_dict
    if settings["ENGINE"].endswith("postgresql"):
        options = settings.setdefault("OPTIONS", {})
        options["options"] = f"{options.get('options', '')} {ASYNC_COMMIT}".strip()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker) -> Iterator[None]:
    """And so do the servers and clusters the tests start on the test database (a setting of the database);
    and the database is dropped only once they have all gone."""
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        name = connection.ops.quote_name(connection.settings_dict["NAME"])
        cursor.execute(f"ALTER DATABASE {name} SET synchronous_commit TO off")
    yield
    with django_db_blocker.unblock():
        _until_others_have_left()


def _until_others_have_left(seconds: float = 10) -> None:
    """Before the test database is dropped: a server or cluster killed at the end of the last test may
    still hold a connection for a moment, and PostgreSQL refuses to drop a database in use (the test
    database was then left behind, and the next run on it failed to create it). What is still
    connected after `seconds` — now and then one connection, idle since early in the run, that a
    thread or process a test started left open — is ended, as DROP DATABASE … WITH (FORCE) would."""
    others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
    deadline = time.monotonic() + seconds
    with connection.cursor() as cursor:
        while time.monotonic() < deadline:
            cursor.execute(f"SELECT count(*) {others}")
            if cursor.fetchone()[0] == 0:
                return
            time.sleep(0.1)
        cursor.execute(f"SELECT pg_terminate_backend(pid) {others}")


# What a transactional test (live server, browser, races) leaves behind is emptied after it. Django's
# way — TRUNCATE of all 33 tables, then the post_migrate signal re-creating every content type and
# permission — costs 1–3 s a test on this machine: TRUNCATE gives each table new files. DELETE of
# the few rows a test wrote takes milliseconds. Row triggers (append-only audit, frozen versions,
# decided requests are final, NOTIFY on token changes) are skipped for it as TRUNCATE skips them,
# with session_replication_role = replica (which also skips foreign-key checks, so the order of the
# tables does not matter). Content types and permissions are left as migrate made them, which is
# what the post_migrate signal would have re-created. Where the role may not do that (not a
# superuser) or off PostgreSQL, Django's flush runs as before. The django-q2 schedules the migrations
# create (sweep, deliveries, audit seal, insights roll-up) stay too, as they do in production: emptied,
# a test reading them passed or failed by which tests its worker had run before.
KEPT_TABLES = {"django_content_type", "auth_permission", "django_q_schedule"}


def _empty_tables(test_case) -> None:
    for alias in test_case._databases_names(include_mirrors=False):
        conn = connections[alias]
        if not _may_skip_triggers(conn):
            _django_fixture_teardown(test_case)
            return
        tables = [t for t in conn.introspection.django_table_names(only_existing=True) if t not in KEPT_TABLES]
        with transaction.atomic(using=alias), conn.cursor() as cursor:
            cursor.execute("SET LOCAL session_replication_role = replica")
            cursor.execute("; ".join(f"DELETE FROM {conn.ops.quote_name(table)}" for table in tables))


def _may_skip_triggers(conn) -> bool:
    with conn.cursor() as cursor:
        cursor.execute("SELECT rolsuper FROM pg_roles WHERE rolname = current_user")
        return bool(cursor.fetchone()[0])


_django_fixture_teardown = TransactionTestCase._fixture_teardown


@pytest.fixture(scope="session", autouse=True)
def _quick_emptying():
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(TransactionTestCase, "_fixture_teardown", _empty_tables)
        yield


def pytest_collection_modifyitems(config, items):
    for item in items:
        live = "live_server" in getattr(item, "fixturenames", ()) or item.get_closest_marker("live_http")
        if live or item.get_closest_marker("browser"):
            item.add_marker(pytest.mark.django_db(transaction=True))


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


@pytest.fixture(scope="session")
def live_server(django_db_setup, django_db_blocker):
    """The server as `make serve` runs it (tests/asgi.py: the ASGI entry, the edge, the LISTEN hub), on
    this worker's test database: what a live test sees is what is deployed, not Django's WSGI test server.

    One per test worker: a subprocess, so a test's `settings` and clock changes do not reach it.
    """
    from .asgi import AsgiServer

    with django_db_blocker.unblock(), AsgiServer() as server:
        server._live_server_modified_settings = override_settings()  # pytest-django enables it per test: nothing
        yield server


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
