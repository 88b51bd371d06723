"""Run-grant rules without a live grant register through the plain statement, and a new grant is heard at once.

Each server process keeps, per run-grant rule, when its last live grant expires
(`approvals.grants.services.live_grants_until`), only while its LISTEN connection hears every new grant
(a trigger NOTIFYs `hitl_grants`). Over HTTP against the production ASGI server: a grant made
after the server has learnt that a rule has none approves the run's next request at once, and a
revoked one stops at once. In-process: a rule known to have none costs no probe of the grant index.
"""

import pytest
from django.db import connection

from approvals.engine.api import registration_answer
from approvals.grants.services import live_grants_until
from approvals.models import ApprovalRequest, Grant
from approvals.review.decide import approval_decide
from workspaces.access import actor_for_token
from workspaces.models import ApiToken, hash_token

from ..helpers import Api, make_token
from .engine_support import capped_server, gate_body
from .test_policy import decide, policy_config

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def server(acme):
    with capped_server() as running:
        yield running


def register(api: Api, config, **overrides) -> dict:
    response = api.post("/api/v1/approvals", json=gate_body(config, rule=1, **overrides))
    assert response.status_code == 201, response.text
    return response.json()


def test_a_grant_made_while_the_server_knows_the_rule_has_none_approves_the_runs_next_request(server, acme, alice, bob):
    config = policy_config(acme, alice)  # its second rule (rule=1) allows run grants
    engine = Api(server.url, make_token(acme, engine="support-engine"))
    reviewer = Api(server.url, make_token(acme, user=bob))
    first = register(engine, config)
    assert register(engine, config, target="customer T-2")["status"] == "pending"  # "none" is known by now

    granted = decide(reviewer, first, grant="run")
    assert granted.status_code == 200, granted.text
    grant_id = granted.json()["decision"]["grant_id"]

    later = register(engine, config, target="customer T-3")
    assert (later["status"], later["decision"]["grant_id"]) == ("approved", grant_id)
    assert register(engine, config, run_id="run_2")["status"] == "pending"  # the grant is the run's alone

    assert reviewer.delete(f"/api/v1/grants/{grant_id}").status_code == 204
    assert register(engine, config, target="customer T-4")["status"] == "pending"


def statements_of(callable_) -> list[str]:
    seen = []

    def keep(execute, sql, params, many, context):
        seen.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        callable_()
    return seen


@pytest.fixture
def engine_key(acme) -> ApiToken:
    raw = make_token(acme, engine="support-engine")
    return ApiToken.objects.select_related("workspace").get(digest=hash_token(raw))


def register_here(engine_key: ApiToken, config, **overrides) -> dict:
    """The registration the API makes (api_engine.registration_answer), in this thread, so its SQL can be seen."""
    body = gate_body(config, rule=1, **overrides)
    status, answer = registration_answer(actor=actor_for_token(engine_key), idempotency_header=None, body=body)
    assert status == 201, answer
    return answer


@pytest.fixture
def kept():
    """The cache as a listening server process has it (the hub sets it live and empties it on each grant)."""
    live_grants_until.invalidate(live=True)
    yield live_grants_until
    live_grants_until.invalidate(live=False)


def test_only_a_run_with_a_live_grant_costs_a_probe(kept, acme, alice, bob, engine_key):
    config = policy_config(acme, alice)
    granted_run = register_here(engine_key, config, run_id="run_granted")
    approval_decide(
        approval=ApprovalRequest.objects.get(public_id=granted_run["id"]),
        user=bob,
        decision="approve",
        grant_ttl_seconds=3600,
    )
    kept.invalidate(live=True)  # what the hub does when it hears the grant's NOTIFY

    first = statements_of(lambda: register_here(engine_key, config, run_id="run_plain"))
    again = statements_of(lambda: register_here(engine_key, config, run_id="run_plain", target="customer T-2"))
    [insert] = [sql for sql in again if sql.startswith("WITH")]
    assert [sql for sql in first if "approvals_grant" in sql and not sql.startswith("WITH")]  # learnt once
    assert "approvals_grant" not in insert  # then the plain statement: no probe of the grant index
    assert not [sql for sql in again if "approvals_grant" in sql]

    statements = []
    covered = statements_of(lambda: statements.append(register_here(engine_key, config, run_id="run_granted")))
    assert [sql for sql in covered if sql.startswith("WITH") and "approvals_grant" in sql]  # probed: a live grant
    assert statements[0]["status"] == "approved"


def test_a_process_that_cannot_hear_new_grants_probes_every_time(acme, alice, engine_key):
    assert not live_grants_until.live  # no LISTEN connection in this process
    config = policy_config(acme, alice)
    for target in ("customer T-1", "customer T-2"):
        statements = statements_of(lambda: register_here(engine_key, config, target=target))  # noqa: B023
        [insert] = [sql for sql in statements if sql.startswith("WITH")]
        assert "approvals_grant" in insert  # the live grant is looked up inside the INSERT
    assert not Grant.objects.exists()
