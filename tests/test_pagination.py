"""Every list pages the same way: `next` is a URL to GET as it is, `next_cursor` is what `cursor=` takes.

A generated client's list function takes `cursor=`; handing it the whole `next` URL answered 404
"Invalid cursor", which reads as "the list is gone". A cursor the server did not write is bad input: 400.
"""

from urllib.parse import parse_qs, urlsplit

import pytest

from contacts.services import contact_create
from tests.factories import make_many
from tests.helpers import error_of, make_config

LISTS = ["/api/v1/approvals", "/api/v1/configs", "/api/v1/configs/{cfg}/contacts"]


@pytest.fixture
def three_of_each(acme):
    support = make_config(acme, "Support agent")
    make_many(support, 3)
    for n in range(3):
        make_config(acme, name=f"Agent {n}")
        contact_create(config=support, name=f"Contact {n}", channel="email", channel_ref=f"${{HITL_ACME_CONTACT_{n}}}")
    return support


@pytest.mark.parametrize("path", LISTS)
def test_next_cursor_passed_as_cursor_walks_the_same_pages_as_following_next(alice_api, three_of_each, path):
    path = path.format(cfg=three_of_each.public_id)
    by_url, url = [], f"{alice_api.base_url}{path}?limit=2"
    while url:
        page = alice_api.get(url).json()
        by_url += [item["id"] for item in page["results"]]
        url = page["next"]
    by_cursor, params = [], {"limit": 2}
    while True:
        page = alice_api.get(path, params=params).json()
        by_cursor += [item["id"] for item in page["results"]]
        if page["next_cursor"] is None:
            assert page["next"] is None
            break
        assert parse_qs(urlsplit(page["next"]).query)["cursor"] == [page["next_cursor"]]
        params = {"limit": 2, "cursor": page["next_cursor"]}

    assert by_cursor == by_url and len(by_url) >= 3 and len(set(by_url)) == len(by_url)


@pytest.mark.parametrize("path", LISTS)
def test_the_whole_next_url_passed_as_cursor_is_a_400_that_says_what_to_pass(alice_api, three_of_each, path):
    path = path.format(cfg=three_of_each.public_id)
    next_url = alice_api.get(path, params={"limit": 1}).json()["next"]

    response = alice_api.get(path, params={"cursor": next_url})

    assert response.status_code == 400
    problem = error_of(response)["fields"]["cursor"]
    assert "whole `next` URL" in problem and "next_cursor" in problem


@pytest.mark.parametrize("path", [*LISTS, "/api/v1/grants", "/api/v1/deliveries"])
def test_a_cursor_the_server_did_not_write_is_a_400_naming_cursor(alice_api, three_of_each, path):
    response = alice_api.get(path.format(cfg=three_of_each.public_id), params={"cursor": "bm90LWEtY3Vyc29y!"})

    assert response.status_code == 400
    assert error_of(response)["code"] == "invalid"
    assert "not one this server wrote" in error_of(response)["fields"]["cursor"]
