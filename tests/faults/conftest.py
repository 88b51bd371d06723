"""Fault tests: real subprocesses (gunicorn, django-q2 cluster) on the test database, killed on purpose."""

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import psycopg
import pytest
import requests
from django.db import connection

from tests.helpers import make_config, make_member, make_rule, make_token, make_workspace, publish
from tests.loopback import ROOT, database_url, free_port, stop, subprocess_env, wait_for

SERVER_APP_NAME = "hitl-faults-server"


def pytest_collection_modifyitems(config, items):
    # This hook sees every collected test, not only this folder's: mark ours alone.
    here = Path(__file__).parent
    for item in items:
        if not Path(item.path).is_relative_to(here):
            continue
        item.add_marker(pytest.mark.faults)
        item.add_marker(pytest.mark.django_db(transaction=True))


def raw_connection() -> psycopg.Connection:
    """A connection of our own, outside Django, in autocommit: it sees what the servers commit."""
    return psycopg.connect(database_url().replace("postgres://", "postgresql://"), autocommit=True)


@pytest.fixture
def world(db):
    """acme (Pro) with a reviewer, an engine key and a published config gating every delete."""
    acme = make_workspace("acme", plan="pro")
    bob = make_member(acme, "bob@acme.test", "reviewer")
    config = make_config(acme, pass_information_level="summary")
    rule = make_rule(config, message="Check before deleting")
    version = publish(config)
    engine_raw = make_token(acme, engine="support-engine")
    from workspaces.models import ApiToken

    return {
        "workspace": acme,
        "bob": bob,
        "bob_token": make_token(acme, user=bob),
        "config": config,
        "rule": rule,
        "version": version,
        "engine_token": engine_raw,
        "engine_key": ApiToken.objects.get(workspace=acme, kind="engine"),
    }


@pytest.fixture
def portal_server(world) -> Iterator[str]:
    """The portal under gunicorn (gthread) on the test database; its connections are named for the killer."""
    port = free_port()
    log = open(ROOT / "test-artifacts" / "faults-gunicorn.log", "w") if (ROOT / "test-artifacts").is_dir() else None
    process = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "gunicorn"),
            "hitl_portal.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--worker-class",
            "gthread",
            "--workers",
            "2",
            "--threads",
            "8",
            "--timeout",
            "60",
        ],
        cwd=ROOT,
        env=subprocess_env(PGAPPNAME=SERVER_APP_NAME),
        stdout=log or subprocess.DEVNULL,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if process.poll() is not None:
            pytest.fail(f"gunicorn exited with {process.returncode}")
        # The health probe, not a page: a worker's first request imports what it serves, and on a busy
        # machine the schema's first build outlasted a timeout that then failed the fixture.
        try:
            return requests.get(url + "/healthz", timeout=5).status_code == 200
        except (requests.ConnectionError, requests.Timeout):
            return False

    try:
        wait_for(up, timeout=30, what="gunicorn to answer", every=0.1)
        yield url
    finally:
        stop(process)
        if log:
            log.close()


class QCluster:
    """`manage.py qcluster` against the test database, started and killed by the test."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "qcluster"],
            cwd=ROOT,
            env=subprocess_env(Q_WORKERS="2"),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def kill(self) -> None:
        """SIGKILL the whole cluster (sentinel, pusher, workers): no clean shutdown, like a lost host."""
        assert self.process is not None
        stop(self.process, signal.SIGKILL)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)


@pytest.fixture
def qcluster(world) -> Iterator[QCluster]:
    cluster = QCluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def status_audit(world) -> Iterator[Callable[[], list[tuple]]]:
    """Every change of a request's status or decision, recorded by a trigger in the writer's transaction.

    A write that rolls back leaves no audit row, so what remains is exactly what was committed.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            """
            CREATE TABLE faults_status_audit (
                request_id bigint, old_status text, new_status text, old_decided_at timestamptz,
                new_decided_by_id bigint, txid bigint DEFAULT txid_current()
            );
            CREATE FUNCTION faults_audit() RETURNS trigger AS $$
            BEGIN
                INSERT INTO faults_status_audit (request_id, old_status, new_status, old_decided_at, new_decided_by_id)
                VALUES (OLD.id, OLD.status, NEW.status, OLD.decided_at, NEW.decided_by_id);
                RETURN NEW;
            END $$ LANGUAGE plpgsql;
            CREATE TRIGGER faults_audit AFTER UPDATE ON approvals_approvalrequest FOR EACH ROW
                WHEN (OLD.status IS DISTINCT FROM NEW.status OR OLD.decided_at IS DISTINCT FROM NEW.decided_at)
                EXECUTE FUNCTION faults_audit();
            """
        )

    def read() -> list[tuple]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT request_id, old_status, new_status, old_decided_at, new_decided_by_id FROM faults_status_audit"
            )
            return cursor.fetchall()

    try:
        yield read
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "DROP TRIGGER IF EXISTS faults_audit ON approvals_approvalrequest;"
                " DROP FUNCTION IF EXISTS faults_audit(); DROP TABLE IF EXISTS faults_status_audit;"
            )


@pytest.fixture
def slow_expiry(world) -> Iterator[Callable[[float], None]]:
    """Make every statement that expires requests hold its transaction open a while, like a loaded disk.

    A statement-level trigger sleeps only when the statement expired something, so decisions run at
    full speed while each sweep batch keeps its row locks long enough to be raced or killed.
    """

    def set_delay(seconds: float) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                CREATE OR REPLACE FUNCTION faults_slow_expiry() RETURNS trigger AS $$
                BEGIN
                    IF EXISTS (SELECT 1 FROM expired_rows WHERE status = 'expired') THEN
                        PERFORM pg_sleep({float(seconds)});
                    END IF;
                    RETURN NULL;
                END $$ LANGUAGE plpgsql;
                DROP TRIGGER IF EXISTS faults_slow_expiry ON approvals_approvalrequest;
                CREATE TRIGGER faults_slow_expiry AFTER UPDATE ON approvals_approvalrequest
                    REFERENCING NEW TABLE AS expired_rows FOR EACH STATEMENT EXECUTE FUNCTION faults_slow_expiry();
                """
            )

    try:
        yield set_delay
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                "DROP TRIGGER IF EXISTS faults_slow_expiry ON approvals_approvalrequest;"
                " DROP FUNCTION IF EXISTS faults_slow_expiry();"
            )
