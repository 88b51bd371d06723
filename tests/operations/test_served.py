"""The portal as `make serve` runs it (gunicorn + uvicorn workers, tests/asgi.py): what only the real
server shows — whom it takes the client's address from, and the first requests after a start."""

import re
import threading

import pytest
import requests

from tests.asgi import AsgiServer
from tests.helpers import PASSWORD, make_member

pytestmark = [pytest.mark.django_db(transaction=True)]


def login(server: AsgiServer, email: str, password: str, forwarded_for: str | None = None) -> requests.Response:
    session = requests.Session()
    page = session.get(server.url + "/login/", timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)[1]
    headers = {"Referer": server.url + "/login/"}
    if forwarded_for:
        headers["X-Forwarded-For"] = forwarded_for
    return session.post(
        server.url + "/login/",
        data={"csrfmiddlewaretoken": token, "username": email, "password": password},
        headers=headers,
        allow_redirects=False,
        timeout=30,
    )


def logged_in(response: requests.Response) -> bool:
    return response.status_code == 302 and "sessionid" in response.cookies


def test_a_new_x_forwarded_for_with_each_wrong_password_is_still_locked_out(acme):
    make_member(acme, "alice@acme.test", "admin")
    with AsgiServer() as server:
        answers = [login(server, "alice@acme.test", "wrong", f"203.0.113.{n}").status_code for n in range(20)]
        assert answers[:4] == [200] * 4  # the form again, with its error
        assert set(answers[4:]) == {429}, answers  # locked: the header named no one the server trusts
        assert not logged_in(login(server, "alice@acme.test", PASSWORD, "198.51.100.7"))


def test_behind_a_trusted_proxy_the_lockout_counts_per_client_address(acme):
    make_member(acme, "alice@acme.test", "admin")
    # The test client plays the proxy, on loopback, and says whom each request came from.
    with AsgiServer(HITL_TRUSTED_PROXIES="127.0.0.1") as server:
        for _ in range(6):
            login(server, "alice@acme.test", "wrong", "203.0.113.9")
        assert login(server, "alice@acme.test", PASSWORD, "203.0.113.9").status_code == 429
        assert logged_in(login(server, "alice@acme.test", PASSWORD, "198.51.100.7"))


def test_concurrent_first_schema_requests_after_a_start_all_answer_the_schema(db):
    with AsgiServer() as server:
        barrier = threading.Barrier(12)
        answers: list[tuple[int, bytes]] = []

        def fetch() -> None:
            barrier.wait()
            response = requests.get(server.url + "/api/schema/?format=json", timeout=60)
            answers.append((response.status_code, response.content))

        threads = [threading.Thread(target=fetch) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    assert [status for status, _ in answers] == [200] * 12
    assert len({body for _, body in answers}) == 1  # one document, built once
