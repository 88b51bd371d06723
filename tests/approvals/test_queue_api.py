"""GET /api/v1/approvals: the reviewer's list, over real HTTP."""

from datetime import timedelta

import pytest
from django.utils import timezone

from approvals.models import Status
from approvals.review.decide import approval_decide
from tests.factories import make_approval, make_many, make_token_cap
from tests.helpers import error_of, make_config

LIST = "/api/v1/approvals"


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent", pass_information_level="full")


def ids(response) -> list[str]:
    assert response.status_code == 200, response.text
    return [row["id"] for row in response.json()["results"]]


def test_it_lists_to_engines_reviewers_and_admins_of_the_workspace_only(
    anonymous_api, engine_api, alice_api, bob_api, charlie_api, support
):
    approval = make_approval(support)
    assert anonymous_api.get(LIST).status_code == 401
    for api in (engine_api, alice_api, bob_api):
        assert ids(api.get(LIST)) == [approval.public_id]
    assert ids(charlie_api.get(LIST)) == []


def test_it_lists_pending_oldest_first_and_the_rest_newest_first(bob_api, alice, support):
    now = timezone.now()
    first = make_approval(support, created_at=now - timedelta(minutes=3))
    second = make_approval(support, created_at=now - timedelta(minutes=2))
    third = make_approval(support, created_at=now - timedelta(minutes=1))
    decided = make_approval(support, created_at=now - timedelta(minutes=4))
    approval_decide(approval=decided, user=alice, decision="approve")
    assert ids(bob_api.get(LIST, params={"status": "pending"})) == [first.public_id, second.public_id, third.public_id]
    assert ids(bob_api.get(LIST)) == [third.public_id, second.public_id, first.public_id, decided.public_id]
    assert ids(bob_api.get(LIST, params={"status": "approved"})) == [decided.public_id]


def test_it_returns_each_request_as_the_api_describes_it(bob_api, support):
    approval = make_approval(support, summary="Delete the record", arguments={"id": "T-4821"})
    row = bob_api.get(LIST).json()["results"][0]
    assert row["id"] == approval.public_id and row["config_id"] == support.public_id
    assert row["status"] == "pending" and row["decision"] is None and row["execution"] is None
    assert row["arguments"] == {"id": "T-4821"} and row["call_digest"] == approval.call_digest
    assert row["expires_at"].endswith("Z")


def test_it_filters_by_config_and_kind(bob_api, acme, support):
    notebook = make_config(acme, "Data notebook")
    gate = make_approval(support, boundary="delete")
    cell = make_approval(notebook, boundary="cell", target="12")
    cap = make_token_cap(support)
    assert ids(bob_api.get(LIST, params={"config": notebook.public_id})) == [cell.public_id]
    assert ids(bob_api.get(LIST, params={"kind": "token_cap"})) == [cap.public_id]
    assert set(ids(bob_api.get(LIST, params={"kind": "gate"}))) == {gate.public_id, cell.public_id}
    assert ids(bob_api.get(LIST, params={"kind": "delete"})) == [gate.public_id]
    assert ids(bob_api.get(LIST, params={"config": "cfg_doesnotexist"})) == []


@pytest.mark.parametrize(
    "params, field",
    [({"status": "done"}, "status"), ({"kind": "tool"}, "kind"), ({"config": "mcp_x"}, "config")],
)
def test_it_refuses_an_unknown_filter_value_naming_it(bob_api, support, params, field):
    response = bob_api.get(LIST, params=params)
    assert response.status_code == 400
    error = error_of(response)
    assert field in error["fields"] and error["message"].startswith(field)


def test_it_pages_with_a_cursor(bob_api, support):
    made = make_many(support, 120)
    seen, url, pages = [], LIST + "?status=pending&limit=50", 0
    while url:
        body = bob_api.get(url.replace(bob_api.base_url, "")).json()
        seen += [row["id"] for row in body["results"]]
        url, pages = body["next"], pages + 1
    assert pages == 3
    assert seen == [a.public_id for a in made]


def test_it_lists_a_status_as_the_reader_sees_it(bob_api, support):
    make_approval(support, status=Status.REJECTED)
    assert ids(bob_api.get(LIST, params={"status": "pending"})) == []


def test_it_lists_expired_requests_as_the_history_page_does_overdue_ones_included(bob_api, client, bob, support):
    now = timezone.now()
    swept = make_approval(support, status=Status.EXPIRED, created_at=now - timedelta(hours=3))
    overdue = make_approval(support, created_at=now - timedelta(hours=2), ttl=timedelta(minutes=1))
    make_approval(support, status=Status.REJECTED, created_at=now - timedelta(hours=1))
    api_ids = ids(bob_api.get(LIST, params={"status": "expired", "limit": 1}))
    second = bob_api.get(LIST, params={"status": "expired", "limit": 1}).json()["next"]
    api_ids += ids(bob_api.get(second.replace(bob_api.base_url, "")))
    client.force_login(bob)
    page = client.get("/hitl/approvals/history/", {"status": "expired"})
    assert api_ids == [overdue.public_id, swept.public_id]
    assert [row.public_id for row in page.context["rows"]] == api_ids
