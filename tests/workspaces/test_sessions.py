"""Who a browser session is: Django's database sessions and ModelBackend, read on every request, so
every change — logout, expiry, a truncated session table, a password, a role, a membership — is
honoured at once, by every server process."""

import time
from datetime import timedelta

import pytest
import requests
from django.contrib.auth import BACKEND_SESSION_KEY
from django.contrib.sessions.models import Session
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from tests.asgi import AsgiServer
from tests.helpers import make_member
from workspaces.models import Membership

QUEUE = "/hitl/approvals/"
CONFIGS = "/hitl/configs/"
KEPT_TABLES = ("django_session", "auth_user", "workspaces_membership", "workspaces_workspace")


def tables_read(client: Client, path: str) -> set[str]:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(path).status_code == 200
    return {table for table in KEPT_TABLES for q in queries if f'FROM "{table}"' in q["sql"]}


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def test_every_page_reads_its_session_user_and_memberships(db, client, bob):
    client.force_login(bob)
    client.get(QUEUE)
    for _ in range(3):
        assert {"django_session", "auth_user", "workspaces_membership"} <= tables_read(client, QUEUE)


def test_a_session_signed_in_by_the_old_kept_backend_is_signed_out_not_an_error(db, client, bob):
    """docs/deploy.md: sessions made before the upgrade name `workspaces.signed_in.KeptModelBackend`."""
    client.force_login(bob)
    session = client.session
    session[BACKEND_SESSION_KEY] = "workspaces.signed_in.KeptModelBackend"
    session.save()

    response = client.get(QUEUE)
    assert response.status_code == 302 and response["Location"].startswith("/login/")
    assert client.get("/api/v1/approvals").status_code in (401, 403)


def test_logging_out_ends_the_kept_session_at_once(db, client, bob, django_capture_on_commit_callbacks):
    client.force_login(bob)
    cookie = client.cookies["sessionid"].value
    assert client.get(QUEUE).status_code == 200

    with django_capture_on_commit_callbacks(execute=True):
        client.post("/logout/")

    again = Client()
    again.cookies["sessionid"] = cookie
    response = again.get(QUEUE)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_a_kept_session_is_not_honoured_past_its_expiry(db, client, bob):
    client.force_login(bob)
    Session.objects.filter(pk=client.cookies["sessionid"].value).update(
        expire_date=timezone.now() + timedelta(seconds=1)
    )
    assert client.get(QUEUE).status_code == 200  # kept, with its expiry
    time.sleep(1.1)
    response = client.get(QUEUE)
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def first_answer_after(server: AsgiServer, cookie: str, path: str, *, differs_from: int, within: float) -> int:
    """The first status other than `differs_from` for `path`, asked again and again for `within` seconds."""
    started = time.monotonic()
    while time.monotonic() - started < within:
        status = requests.get(
            server.url + path, cookies={"sessionid": cookie}, allow_redirects=False, timeout=10
        ).status_code
        if status != differs_from:
            return status
    raise AssertionError(f"{path} still answered {differs_from} after {within} s")


@pytest.fixture
def served(acme):
    with AsgiServer() as server:
        yield server


def kept_session(server: AsgiServer, acme, role: str = "reviewer", path: str = QUEUE) -> tuple:
    """Carol, signed in, and her session cookie, after a few pages the server answered."""
    carol = make_member(acme, "carol@acme.test", role)
    cookie = session_cookie(carol)
    for _ in range(3):
        assert requests.get(server.url + path, cookies={"sessionid": cookie}, timeout=10).status_code == 200
    return carol, cookie


@pytest.mark.django_db(transaction=True)
def test_a_session_ended_elsewhere_is_refused_by_the_server_at_once(served, acme):
    _, cookie = kept_session(served, acme)

    Session.objects.filter(pk=cookie).delete()  # a logout served by another process, or `clearsessions`

    assert first_answer_after(served, cookie, QUEUE, differs_from=200, within=1) == 302


@pytest.mark.django_db(transaction=True)
def test_a_truncated_session_table_signs_everyone_out_at_once(served, acme):
    _, cookie = kept_session(served, acme)

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE django_session")

    assert first_answer_after(served, cookie, QUEUE, differs_from=200, within=1) == 302


@pytest.mark.django_db(transaction=True)
def test_a_password_changed_elsewhere_signs_the_session_out_at_once(served, acme):
    carol, cookie = kept_session(served, acme)

    carol.set_password("A new one, changed in the admin")
    carol.save()

    assert first_answer_after(served, cookie, QUEUE, differs_from=200, within=1) == 302


@pytest.mark.django_db(transaction=True)
def test_a_member_removed_elsewhere_loses_the_workspace_at_once(served, acme):
    carol, cookie = kept_session(served, acme)

    Membership.objects.filter(user=carol).delete()

    assert first_answer_after(served, cookie, QUEUE, differs_from=200, within=1) == 403


@pytest.mark.django_db(transaction=True)
def test_an_admin_made_reviewer_elsewhere_loses_the_admin_forms_at_once(served, acme):
    carol, cookie = kept_session(served, acme, "admin", CONFIGS)
    assert "Create config" in requests.get(served.url + CONFIGS, cookies={"sessionid": cookie}, timeout=10).text

    Membership.objects.filter(user=carol).update(role="reviewer")

    started = time.monotonic()
    while "Create config" in requests.get(served.url + CONFIGS, cookies={"sessionid": cookie}, timeout=10).text:
        assert time.monotonic() - started < 1, "the configs page still offered an admin's forms"
