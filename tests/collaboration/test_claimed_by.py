"""A person's read of a request says who is on it (`claimed_by`), as the claim endpoints do; an engine's does not."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from collaboration.models import Claim
from tests.factories import make_approval, make_many
from tests.helpers import make_config
from tests.schema import Schema

LIST = "/api/v1/approvals"


@pytest.fixture
def support(acme):
    return make_config(acme, "Support agent", pass_information_level="full")


def claimed_by(api, approval) -> str | None:
    response = api.get(f"/api/v1/approvals/{approval.public_id}")
    assert response.status_code == 200, response.text
    return response.json()["claimed_by"]


def test_a_reviewers_read_names_the_claimant_until_the_claim_is_released(db, bob_api, alice_api, support):
    approval = make_approval(support)
    path = f"/api/v1/approvals/{approval.public_id}/claim"
    assert claimed_by(alice_api, approval) is None

    taken = bob_api.post(path)
    assert taken.status_code == 200, taken.text
    assert claimed_by(alice_api, approval) == claimed_by(bob_api, approval) == taken.json()["claimed_by"]
    assert claimed_by(alice_api, approval) == "bob@acme.test"

    assert bob_api.delete(path).status_code == 204
    assert not Claim.objects.filter(approval=approval).exists()
    assert claimed_by(alice_api, approval) is None


def test_a_decided_request_names_no_claimant_as_its_page_and_cards_do(db, bob_api, alice_api, support):
    approval = make_approval(support)
    assert bob_api.post(f"/api/v1/approvals/{approval.public_id}/claim").status_code == 200
    decided = alice_api.post(f"/api/v1/approvals/{approval.public_id}/decision", {"decision": "approve"})
    assert decided.status_code == 200, decided.text
    assert claimed_by(bob_api, approval) is None


def test_the_list_and_a_runs_story_name_the_claimant_of_each_row(db, bob_api, alice_api, support):
    claimed = make_approval(support, run_id="run_7")
    unclaimed = make_approval(support, run_id="run_7")
    assert bob_api.post(f"/api/v1/approvals/{claimed.public_id}/claim").status_code == 200

    for path in (LIST, "/api/v1/runs/run_7"):
        rows = alice_api.get(path).json()["results"]
        assert {row["id"]: row["claimed_by"] for row in rows} == {
            claimed.public_id: "bob@acme.test",
            unclaimed.public_id: None,
        }, path


def test_a_reviewer_of_another_workspace_sees_neither_the_request_nor_its_claimant(db, bob_api, charlie_api, support):
    approval = make_approval(support)
    bob_api.post(f"/api/v1/approvals/{approval.public_id}/claim")
    assert charlie_api.get(f"/api/v1/approvals/{approval.public_id}").status_code == 404
    assert charlie_api.get(LIST).json()["results"] == []


def test_an_engines_reads_carry_no_claimant_and_never_read_the_claims(db, bob_api, engine_api, support):
    approval = make_approval(support)
    bob_api.post(f"/api/v1/approvals/{approval.public_id}/claim")
    with CaptureQueriesContext(connection) as queries:
        read = engine_api.get(f"/api/v1/approvals/{approval.public_id}").json()
        listed = engine_api.get(LIST).json()["results"]
    assert "claimed_by" not in read and all("claimed_by" not in row for row in listed)
    assert not [query["sql"] for query in queries if Claim._meta.db_table in query["sql"]]


def test_the_list_reads_the_claims_once_however_many_rows(db, bob_api, alice_api, support):
    def queries_of_the_list() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert alice_api.get(LIST).status_code == 200
        return len(queries)

    bob_api.post(f"/api/v1/approvals/{make_approval(support).public_id}/claim")
    few = queries_of_the_list()
    for approval in make_many(support, 20)[:10]:
        bob_api.post(f"/api/v1/approvals/{approval.public_id}/claim")
    assert len(alice_api.get(LIST).json()["results"]) == 21
    assert queries_of_the_list() == few


def test_the_schema_describes_a_reviewers_read_and_an_engines(db, anonymous_api, bob_api, engine_api, support):
    schema = Schema.served(anonymous_api)
    approval = make_approval(support)
    bob_api.post(f"/api/v1/approvals/{approval.public_id}/claim")
    for api in (bob_api, engine_api):
        schema.check_response("get", "/api/v1/approvals/{apr}", api.get(f"/api/v1/approvals/{approval.public_id}"))
        schema.check_response("get", LIST, api.get(LIST))


@pytest.mark.live_http
def test_a_reviewers_bearer_read_through_the_edge_names_the_claimant(bob_api, engine_api, support):
    """A person's token polls through the edge (edge/calls.py) under the ASGI server, as an engine's does."""
    approval = make_approval(support)
    assert bob_api.post(f"/api/v1/approvals/{approval.public_id}/claim").status_code == 200
    assert claimed_by(bob_api, approval) == "bob@acme.test"
    assert "claimed_by" not in engine_api.get(f"/api/v1/approvals/{approval.public_id}").json()
