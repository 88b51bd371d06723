"""GET /api/v1/approvals/{apr}?wait=S: read a request, long-poll for its decision, see expiry on read."""

import threading
import time
from datetime import timedelta

import pytest

from approvals.expiry.expire import approval_expire_if_overdue
from approvals.models import EXPIRED_REASON, ApprovalRequest

from ..helpers import Api, error_of, make_token, travel
from .engine_support import bulk_requests, count_queries, decide, gate_body, token_cap_body


@pytest.fixture
def pending(engine_api, support) -> dict:
    response = engine_api.post("/api/v1/approvals", json=gate_body(support))
    assert response.status_code == 201
    return response.json()


def test_it_reads_a_request_for_engines_reviewers_and_admins_of_its_workspace(
    engine_api, bob_api, alice_api, anonymous_api, pending
):
    people = {**pending, "claimed_by": None}  # a person's read also says who is on it: nobody yet
    for api, read in ((engine_api, pending), (bob_api, people), (alice_api, people)):
        response = api.get(f"/api/v1/approvals/{pending['id']}")
        assert response.status_code == 200
        assert response.json() == read
    assert anonymous_api.get(f"/api/v1/approvals/{pending['id']}").status_code == 401


def test_it_answers_404_to_another_workspace_exactly_like_a_missing_request(make_api, globex, charlie_api, pending):
    foreign_engine = make_api(make_token(globex, engine="globex-engine"))

    for api in (charlie_api, foreign_engine):
        foreign = api.get(f"/api/v1/approvals/{pending['id']}")
        missing = api.get("/api/v1/approvals/apr_doesnotexist00")
        assert foreign.status_code == missing.status_code == 404
        assert error_of(foreign)["code"] == "not_found"
    outcome = foreign_engine.post(f"/api/v1/approvals/{pending['id']}/outcome", json={"status": "executed"})
    assert outcome.status_code == 404


@pytest.mark.parametrize("wait", ["31", "-1", "abc", "nan", "inf", "1e400"])
def test_it_refuses_a_wait_outside_0_to_30_seconds(engine_api, pending, wait):
    response = engine_api.get(f"/api/v1/approvals/{pending['id']}", params={"wait": wait})

    assert response.status_code == 400
    assert "wait must be a number of seconds from 0 to 30" in error_of(response)["fields"]["wait"]


@pytest.mark.live_http
def test_it_answers_at_once_when_the_request_is_already_decided(engine_api, bob, pending):
    decide(pending["id"], bob, "reject", reason="Not this customer.")

    started = time.monotonic()
    response = engine_api.get(f"/api/v1/approvals/{pending['id']}", params={"wait": 30})

    assert time.monotonic() - started < 5  # not the 30 s of the wait
    approval = response.json()
    assert approval["status"] == "rejected"
    assert approval["decision"]["outcome"] == "rejected"
    assert approval["decision"]["action"] == "halt"
    assert approval["decision"]["reason"] == "Not this customer."
    assert approval["decision"]["decided_by"] == "bob@acme.test"
    assert approval["decision"]["expired"] is False


@pytest.mark.live_http
def test_it_answers_still_pending_when_the_wait_is_over(engine_api, pending):
    response = engine_api.get(f"/api/v1/approvals/{pending['id']}", params={"wait": 1})

    assert response.status_code == 200
    assert response.json()["status"] == "pending"
    assert response.json()["decision"] is None


@pytest.mark.live_http  # the decision comes from another connection while the request waits
def test_it_wakes_a_long_poll_within_a_second_of_a_decision_made_from_another_connection(engine_api, bob, pending):
    answered: dict = {}

    def long_poll() -> None:
        response = engine_api.get(f"/api/v1/approvals/{pending['id']}", params={"wait": 20})
        answered["at"] = time.monotonic()
        answered["approval"] = response.json()

    poller = threading.Thread(target=long_poll)
    poller.start()
    time.sleep(1.5)  # let the server reach its LISTEN; a poll that missed the NOTIFY would sleep ~18 s more
    assert "at" not in answered, "the long-poll answered before anything was decided"

    decided_at = time.monotonic()
    decide(pending["id"], bob, "approve", reason="Go ahead.")  # this test's own connection, not the server's
    poller.join(timeout=25)

    assert answered["approval"]["status"] == "approved"
    assert answered["approval"]["decision"]["action"] == "resume"
    assert answered["at"] - decided_at < 1.0


def test_a_wait_through_django_is_a_plain_poll(engine_api, pending):
    """Django's view (a browser session, the test client) answers `?wait` at once: the wait is the edge's."""
    started = time.monotonic()
    response = engine_api.get(f"/api/v1/approvals/{pending['id']}", params={"wait": 20})

    assert response.status_code == 200 and response.json()["status"] == "pending"
    assert time.monotonic() - started < 5


def test_it_sees_expiry_on_read_with_no_worker(engine_api, bob_api, pending):
    with travel(timedelta(hours=24, seconds=1)):
        approval = engine_api.get(f"/api/v1/approvals/{pending['id']}").json()
        as_reviewer = bob_api.get(f"/api/v1/approvals/{pending['id']}").json()

    assert approval["status"] == as_reviewer["status"] == "expired"
    assert approval["decision"] == {
        "outcome": "rejected",
        "action": "halt",
        "decided_by": None,
        "on_behalf_of": None,
        "decided_at": pending["expires_at"],
        "reason": EXPIRED_REASON,
        "expired": True,
        "undeliverable": False,
        "grant_id": None,
        # Approve with edits: the call decided on (the proposal: nobody edited it).
        "arguments": approval["arguments"],
        "call_digest": approval["call_digest"],
        "edited": False,
        "answers": None,
        "withdrawn": False,
    }
    assert "Nobody answered" in approval["decision"]["reason"]
    assert "reject" not in approval["decision"]["reason"].split("counts as rejected")[-1]
    # The read made it so: the row is expired, not only displayed as expired.
    assert ApprovalRequest.objects.get(public_id=pending["id"]).status == "expired"


@pytest.mark.live_http
def test_it_ends_a_long_poll_when_the_request_expires(engine_api, support):
    approval = engine_api.post("/api/v1/approvals", json=gate_body(support, ttl_seconds=1)).json()

    started = time.monotonic()
    answer = engine_api.get(f"/api/v1/approvals/{approval['id']}", params={"wait": 15}).json()

    assert answer["status"] == "expired"
    assert answer["decision"]["expired"] is True
    assert time.monotonic() - started < 10  # woken at expires_at, not at the end of the wait


def test_it_tells_a_token_cap_that_expired_to_stop_the_run(engine_api, support):
    approval = engine_api.post("/api/v1/approvals", json=token_cap_body(support)).json()

    with travel(timedelta(hours=25)):
        answer = engine_api.get(f"/api/v1/approvals/{approval['id']}").json()

    assert answer["status"] == "expired"
    assert answer["decision"]["action"] == "stop_run"


def test_it_does_not_let_a_late_decision_overwrite_an_expiry(engine_api, bob, pending):
    with travel(timedelta(hours=25)):
        approval_expire_if_overdue(approval=ApprovalRequest.objects.get(public_id=pending["id"]))
        decided = decide(pending["id"], bob, "approve")

    assert decided.status == "expired"
    assert engine_api.get(f"/api/v1/approvals/{pending['id']}").json()["decision"]["expired"] is True


def _poll_queries(api: Api, public_id: str, wait: float) -> int:
    with count_queries() as queries:
        response = api.get(f"/api/v1/approvals/{public_id}", params={"wait": wait})
    assert response.status_code == 200
    return len(queries)


def test_it_polls_with_the_same_few_queries_whatever_the_table_holds(engine_api, support, pending):
    bulk_requests(support, 5)
    _poll_queries(engine_api, pending["id"], 0)  # connection set-up aside

    few_read, few_wait = _poll_queries(engine_api, pending["id"], 0), _poll_queries(engine_api, pending["id"], 0.5)
    bulk_requests(support, 500)
    many_read, many_wait = _poll_queries(engine_api, pending["id"], 0), _poll_queries(engine_api, pending["id"], 0.5)

    assert (few_read, few_wait) == (many_read, many_wait)
    assert many_read <= 2  # the token, the request
    assert many_wait <= 2  # through Django a wait is a plain poll (the edge's are in tests/test_edge.py)
