"""The approver policy over real HTTP: requested_by, quorum votes, four eyes and run grants (API.md, Reviewers)."""

import threading
import time
from datetime import timedelta

import pytest

from approvals.models import ApprovalRequest, Grant, Status, Vote
from tests.helpers import Api, error_of, make_config, make_member, make_rule, make_token, publish, travel

from .engine_support import count_queries, gate_body, token_cap_body


def policy_config(workspace, user=None, name: str = "Support agent", **policy):
    """Published v1 with one rule gating every delete under `policy`, and a second rule allowing grants."""
    config = make_config(workspace, name, pass_information_level="full", token_cap_per_turn=1000)
    make_rule(config, message="Deletes need approval.", **policy)
    make_rule(config, kind="worker", match="*", allow_run_grant=True, order=20)
    publish(config, user)
    return config


@pytest.fixture
def dave(acme):
    return make_member(acme, "dave@acme.test", "reviewer")


@pytest.fixture
def dave_api(live_server, acme, dave) -> Api:
    return Api(live_server.url, make_token(acme, user=dave))


def register(engine_api, config, **overrides) -> dict:
    response = engine_api.post("/api/v1/approvals", gate_body(config, **overrides))
    assert response.status_code == 201, response.text
    return response.json()


def decide(api, approval: dict, decision: str = "approve", **extra):
    return api.post(f"/api/v1/approvals/{approval['id']}/decision", {"decision": decision, **extra})


def test_it_stores_requested_by_and_the_frozen_quorum_in_every_representation(engine_api, bob_api, acme, alice):
    config = policy_config(acme, alice, approvals_required=2)
    created = register(engine_api, config, requested_by="Ana@Example.com")
    assert (created["requested_by"], created["approvals_required"], created["approvals"]) == ("Ana@Example.com", 2, [])
    row = ApprovalRequest.objects.get(public_id=created["id"])
    assert (row.requested_by, row.approvals_required) == ("Ana@Example.com", 2)
    polled = engine_api.get(f"/api/v1/approvals/{created['id']}").json()
    listed = bob_api.get("/api/v1/approvals?status=pending").json()["results"][0]
    for body in (polled, listed):
        assert (body["requested_by"], body["approvals_required"], body["approvals"]) == ("Ana@Example.com", 2, [])
    plain = register(engine_api, config, rule=1, requested_by=...)
    assert (plain["requested_by"], plain["approvals_required"]) == (None, 1)


@pytest.mark.parametrize("requested_by", ["not an email", "a" * 250 + "@x.io", 42])
def test_it_refuses_a_requested_by_that_is_not_an_email_naming_the_field(engine_api, acme, alice, requested_by):
    config = policy_config(acme, alice)
    response = engine_api.post("/api/v1/approvals", gate_body(config, requested_by=requested_by))
    assert response.status_code == 400
    assert "requested_by" in error_of(response)["fields"]
    assert not ApprovalRequest.objects.exists()


def test_it_decides_a_two_of_n_request_on_the_second_distinct_approval(
    engine_api, bob_api, alice_api, dave_api, acme, alice, bob
):
    config = policy_config(acme, alice, approvals_required=2)
    approval = register(engine_api, config)

    first = decide(bob_api, approval, reason="Customer asked.")
    assert first.status_code == 200
    body = first.json()
    assert body["status"] == "pending" and body["decision"] is None
    assert (body["already_voted"], body["already_decided"]) == (False, False)
    assert [(vote["by"], vote["reason"]) for vote in body["approvals"]] == [("bob@acme.test", "Customer asked.")]

    again = decide(bob_api, approval).json()
    assert (again["status"], again["already_voted"], again["already_decided"]) == ("pending", True, False)
    assert Vote.objects.count() == 1

    second = decide(alice_api, approval, reason="Fine.").json()
    assert second["status"] == "approved" and second["already_voted"] is False
    assert second["decision"]["decided_by"] == "alice@acme.test" and second["decision"]["action"] == "resume"
    assert [vote["by"] for vote in second["approvals"]] == ["bob@acme.test", "alice@acme.test"]

    late = decide(dave_api, approval).json()
    assert (late["already_decided"], late["decision"]) == (True, second["decision"])
    assert Vote.objects.count() == 2
    assert engine_api.get(f"/api/v1/approvals/{approval['id']}").json()["approvals"] == second["approvals"]


def test_it_rejects_a_quorum_request_on_one_rejection(engine_api, bob_api, alice_api, acme, alice):
    config = policy_config(acme, alice, approvals_required=3)
    approval = register(engine_api, config)
    decide(bob_api, approval)
    body = decide(alice_api, approval, "reject", reason="Not this one.").json()
    assert body["status"] == "rejected" and body["decision"]["decided_by"] == "alice@acme.test"
    assert [vote["by"] for vote in body["approvals"]] == ["bob@acme.test"]  # the vote stays on record
    assert decide(bob_api, approval).json()["already_decided"] is True


@pytest.mark.live_http  # the votes come from other connections while the request waits
def test_it_wakes_a_long_poll_on_the_deciding_vote_not_the_first(engine_api, bob_api, alice_api, acme, alice):
    config = policy_config(acme, alice, approvals_required=2)
    approval = register(engine_api, config)
    answers = []
    started = time.monotonic()
    poll = threading.Thread(
        target=lambda: answers.append(
            (engine_api.get(f"/api/v1/approvals/{approval['id']}?wait=10").json(), time.monotonic() - started)
        )
    )
    poll.start()
    time.sleep(0.5)
    decide(bob_api, approval)
    time.sleep(1.0)
    assert poll.is_alive(), "the first of two votes answered the long-poll"
    decide(alice_api, approval)
    poll.join(timeout=10)
    body, elapsed = answers[0]
    assert body["status"] == "approved" and len(body["approvals"]) == 2
    assert 1.5 <= elapsed < 5


def test_it_keeps_the_person_the_run_acts_for_from_approving_it(engine_api, bob_api, alice_api, acme, alice):
    config = policy_config(acme, alice)
    approval = register(engine_api, config, requested_by="BOB@acme.test")
    refused = decide(bob_api, approval, reason="It is mine.")
    assert refused.status_code == 403
    error = error_of(refused)
    assert error["code"] == "self_approval" and "another reviewer" in error["message"]
    assert ApprovalRequest.objects.get(public_id=approval["id"]).status == Status.PENDING
    # Rejecting is allowed; another reviewer may approve.
    other = register(engine_api, config, requested_by="bob@acme.test", run_id="run_2")
    assert decide(alice_api, other).json()["status"] == "approved"
    rejected = decide(bob_api, approval, "reject", reason="Changed my mind.")
    assert rejected.status_code == 200 and rejected.json()["status"] == "rejected"


def test_it_lets_the_requester_approve_when_the_rule_allows_self_approval(engine_api, bob_api, acme, alice):
    config = policy_config(acme, alice, self_approval=True)
    approval = register(engine_api, config, requested_by="bob@acme.test")
    assert decide(bob_api, approval).json()["status"] == "approved"


def test_it_applies_four_eyes_to_a_quorum_vote_and_to_a_token_cap(engine_api, bob_api, alice_api, acme, alice):
    config = policy_config(acme, alice, approvals_required=2)
    approval = register(engine_api, config, requested_by="bob@acme.test")
    assert error_of(decide(bob_api, approval))["code"] == "self_approval"
    assert not Vote.objects.exists()
    cap = engine_api.post("/api/v1/approvals", token_cap_body(config, requested_by="bob@acme.test")).json()
    assert cap["approvals_required"] == 1
    assert error_of(decide(bob_api, cap, "proceed"))["code"] == "self_approval"
    assert decide(alice_api, cap, "proceed").json()["approvals"][0]["by"] == "alice@acme.test"


def grants(api, **query) -> list[dict]:
    response = api.get("/api/v1/grants", params=query)
    assert response.status_code == 200, response.text
    return response.json()["results"]


def test_it_approves_the_rest_of_a_run_through_a_grant_scoped_to_its_config_rule_and_run(
    engine_api, bob_api, acme, alice
):
    config = policy_config(acme, alice, allow_run_grant=True)
    other_config = policy_config(acme, alice, name="Other agent", allow_run_grant=True)
    first = register(engine_api, config)
    granted = decide(bob_api, first, grant="run", reason="This run is fine.")
    assert granted.status_code == 200, granted.text
    grant_id = granted.json()["decision"]["grant_id"]
    assert granted.json()["status"] == "approved" and grant_id.startswith("grt_")
    [listed] = grants(bob_api, active="true")
    assert (listed["id"], listed["config_id"], listed["run_id"], listed["granted_by"], listed["uses"]) == (
        grant_id,
        config.public_id,
        "run_1",
        "bob@acme.test",
        0,
    )
    grant = Grant.objects.get()
    assert round((grant.expires_at - grant.created_at).total_seconds()) == 3600

    later = register(engine_api, config, target="customer T-9")
    assert later["status"] == "approved"
    assert later["decision"]["grant_id"] == grant_id and later["decision"]["decided_by"] == "bob@acme.test"
    assert later["decision"]["action"] == "resume"
    assert later["approvals"][0]["by"] == "bob@acme.test"
    started = time.monotonic()
    assert engine_api.get(f"/api/v1/approvals/{later['id']}?wait=10").json()["status"] == "approved"
    assert time.monotonic() - started < 2

    assert register(engine_api, config, run_id="run_2")["status"] == "pending"
    assert register(engine_api, config, rule=1)["status"] == "pending"
    assert register(engine_api, other_config)["status"] == "pending"
    assert grants(bob_api, active="true")[0]["uses"] == 1


def test_it_revokes_a_grant_at_once(engine_api, bob_api, alice_api, acme, alice):
    config = policy_config(acme, alice, allow_run_grant=True)
    grant_id = decide(bob_api, register(engine_api, config), grant="run").json()["decision"]["grant_id"]
    assert register(engine_api, config)["status"] == "approved"
    response = alice_api.delete(f"/api/v1/grants/{grant_id}")
    assert response.status_code == 204
    assert register(engine_api, config)["status"] == "pending"
    assert grants(bob_api, active="true") == []
    [ended] = grants(bob_api, active="false")
    assert ended["revoked_at"] and ended["uses"] == 1
    assert alice_api.delete(f"/api/v1/grants/{grant_id}").status_code == 204  # twice changes nothing


def test_it_lets_a_grant_expire_after_its_ttl(engine_api, bob_api, acme, alice):
    config = policy_config(acme, alice, allow_run_grant=True)
    granted = decide(bob_api, register(engine_api, config), grant="run", grant_ttl_seconds=60).json()
    assert granted["decision"]["grant_id"]
    with travel(timedelta(seconds=59)):
        assert register(engine_api, config)["status"] == "approved"
    with travel(timedelta(seconds=61)):
        assert register(engine_api, config)["status"] == "pending"
        assert grants(bob_api, active="true") == []


def test_it_never_lets_a_grant_approve_for_its_own_reviewer_under_four_eyes(engine_api, bob_api, acme, alice):
    config = policy_config(acme, alice, allow_run_grant=True)
    decide(bob_api, register(engine_api, config), grant="run")
    assert register(engine_api, config, requested_by="ana@example.com")["status"] == "approved"
    assert register(engine_api, config, requested_by="Bob@acme.test")["status"] == "pending"


@pytest.mark.parametrize(
    "policy, extra, field",
    [
        ({}, {"grant": "run"}, "grant"),
        ({"approvals_required": 2}, {"grant": "run"}, "grant"),
        ({"allow_run_grant": True}, {"grant": "run", "grant_ttl_seconds": 59}, "grant_ttl_seconds"),
        ({"allow_run_grant": True}, {"grant": "run", "grant_ttl_seconds": 28_801}, "grant_ttl_seconds"),
        ({"allow_run_grant": True}, {"grant": "forever"}, "grant"),
        ({"allow_run_grant": True}, {"grant_ttl_seconds": 600}, "grant_ttl_seconds"),
    ],
)
def test_it_refuses_a_grant_the_rule_or_the_limits_do_not_allow(engine_api, bob_api, acme, alice, policy, extra, field):
    config = policy_config(acme, alice, **policy)
    approval = register(engine_api, config)
    response = decide(bob_api, approval, **extra)
    assert response.status_code == 400, response.text
    assert field in error_of(response)["fields"]
    assert ApprovalRequest.objects.get(public_id=approval["id"]).status == Status.PENDING
    assert not Grant.objects.exists()


def test_it_refuses_a_grant_with_a_rejection(engine_api, bob_api, acme, alice):
    config = policy_config(acme, alice, allow_run_grant=True)
    response = decide(bob_api, register(engine_api, config), "reject", grant="run")
    assert response.status_code == 400 and "grant" in error_of(response)["fields"]


def test_it_shows_and_revokes_grants_only_to_reviewers_of_the_workspace(
    engine_api, bob_api, charlie_api, anonymous_api, acme, alice
):
    config = policy_config(acme, alice, allow_run_grant=True)
    grant_id = decide(bob_api, register(engine_api, config), grant="run").json()["decision"]["grant_id"]
    assert anonymous_api.get("/api/v1/grants").status_code == 401
    assert engine_api.get("/api/v1/grants").status_code == 403
    assert engine_api.delete(f"/api/v1/grants/{grant_id}").status_code == 403
    assert grants(charlie_api) == []
    assert charlie_api.delete(f"/api/v1/grants/{grant_id}").status_code == 404
    assert Grant.objects.get().revoked_at is None
    assert bob_api.get("/api/v1/grants?active=maybe").status_code == 400


def test_it_checks_for_a_grant_inside_the_registration_insert_without_another_query(engine_api, bob_api, acme, alice):
    config = policy_config(acme, alice)  # rule 0 plain, rule 1 allows grants
    register(engine_api, config, run_id="warm-up")  # the frozen version is cached per process
    with count_queries() as plain:
        register(engine_api, config, run_id="run_plain")
    with count_queries() as grantable:
        assert register(engine_api, config, rule=1, run_id="run_2")["status"] == "pending"
    decide(bob_api, register(engine_api, config, rule=1, run_id="run_3"), grant="run")
    with count_queries() as granted:
        assert register(engine_api, config, rule=1, run_id="run_3")["status"] == "approved"
    assert len(grantable) == len(plain) == len(granted), (plain.statements, grantable.statements)
