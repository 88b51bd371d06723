"""hitl-client's ask() and review_plan() against the live portal: a run asks people, a reviewer answers."""

import asyncio
import threading
from datetime import timedelta

import pytest
from hitl_client import AsyncHitlClient, HitlClient

from approvals.expiry.expire import expire_requests
from approvals.models import ApprovalRequest
from workspaces.services import workspace_set_plan

from .adapters.support import Reviewer, wait_until_pending
from .approvals.engine_support import make_support_config
from .helpers import make_token, travel

RUN = {"run_id": "run_q", "thread_id": "thr_q", "caller": "release-bot"}
QUESTIONS = [
    {
        "id": "env",
        "prompt": "Deploy where?",
        "type": "choice",
        "options": [{"value": "staging"}, {"value": "prod", "label": "Production"}],
        "recommended": 1,
        "free_text": False,
    },
    {
        "id": "checks",
        "prompt": "Which checks first?",
        "type": "choice",
        "multi": True,
        "options": [{"value": "smoke"}, {"value": "load"}, {"value": "security"}],
    },
    {"id": "replicas", "prompt": "How many replicas?", "type": "number", "min": 1, "max": 10},
    {"id": "migrate", "prompt": "Run the migrations?", "type": "boolean"},
    {"id": "note", "prompt": "Anything else?", "type": "text", "required": False},
]
PLAN = "## Plan\n\n1. Back up the database\n2. Run the migrations\n3. Deploy to **staging**\n"


@pytest.fixture
def support(acme, alice):
    return make_support_config(acme, alice)


@pytest.fixture
def client(live_server, acme) -> HitlClient:
    return HitlClient(live_server.url, make_token(acme, engine="release-engine"))


def test_it_asks_and_gets_the_answers_back_typed(client, support, bob_api):
    served = client.served(support.public_id)
    answers = {"env": "staging", "checks": ["smoke", "security"], "replicas": 3, "migrate": True}

    reviewer = Reviewer(bob_api, "answer", body={"answers": answers})
    got = client.ask(served, QUESTIONS, title="Release 4.2", call_id="ask_1", wait_timeout=20, **RUN)
    [decided] = reviewer.finish()

    assert got.answered and got.state == "answered" and got.answered_by == "bob@acme.test"
    assert got["env"] == "staging" and got["checks"] == ["smoke", "security"]
    assert got["replicas"] == 3 and got["migrate"] is True and "note" not in got
    assert "- Deploy where? (env): staging" in got.message and "- Run the migrations? (migrate): yes" in got.message
    assert decided["kind"] == "question" and decided["status"] == "answered"
    stored = ApprovalRequest.objects.get(public_id=decided["id"])
    assert (stored.run_id, stored.thread_id, stored.caller) == ("run_q", "thr_q", "release-bot")


def test_asking_again_with_the_same_call_id_waits_on_the_same_question(client, support, bob_api):
    served = client.served(support.public_id)

    first = client.ask(served, QUESTIONS[0], call_id="ask_2", wait_timeout=1, **RUN)  # nobody yet
    [asked] = wait_until_pending(bob_api)
    reviewer = Reviewer(bob_api, "answer", body={"answers": {"env": "prod"}})
    again = client.ask(served, QUESTIONS[0], call_id="ask_2", wait_timeout=20, **RUN)  # e.g. a restarted engine
    [decided] = reviewer.finish()

    assert first.state == "timeout" and not first.answered
    assert decided["id"] == asked["id"] and ApprovalRequest.objects.count() == 1
    assert again["env"] == "prod"


def test_a_decline_comes_back_with_the_persons_words_and_no_answers(client, support, bob_api):
    served = client.served(support.public_id)

    reviewer = Reviewer(bob_api, "decline", "Ask the release manager.")
    got = client.ask(served, QUESTIONS, call_id="ask_3", wait_timeout=20, **RUN)
    reviewer.finish()

    assert got.declined and got.state == "declined" and got.values == {}
    assert got.reason == "Ask the release manager."
    assert "declined to answer: Ask the release manager" in got.message


def test_an_expired_question_is_nobody_answered_never_the_recommended_option(client, support, bob_api):
    served = client.served(support.public_id)

    def sweep_when_asked() -> None:
        wait_until_pending(bob_api)
        with travel(timedelta(hours=25)):
            expire_requests(ApprovalRequest.objects.all())

    sweeper = threading.Thread(target=sweep_when_asked)
    sweeper.start()
    got = client.ask(served, QUESTIONS, call_id="ask_4", wait_timeout=20, **RUN)
    sweeper.join()

    assert got.expired and got.state == "expired" and got.values == {} and got.get("env") is None
    assert got.message.startswith("Nobody answered") and "declined" not in got.message
    assert got.approval["decision"]["expired"] is True


def test_on_the_free_plan_nobody_can_answer_and_nothing_is_stored(client, acme, support):
    workspace_set_plan(workspace=acme, plan="free")
    served = client.served(support.public_id)

    got = client.ask(served, QUESTIONS, call_id="ask_5", wait_timeout=5, **RUN)

    assert got.state == "inert" and not got.answered and "best assumption" in got.message
    assert not ApprovalRequest.objects.exists()


def test_an_approved_plan_and_a_plan_sent_back_with_the_reviewers_words(live_server, acme, support, bob_api):
    async def engine():
        client = AsyncHitlClient(live_server.url, make_token(acme, engine="release-engine"))
        served = await client.served(support.public_id)
        reviewer = Reviewer(bob_api, "revise", "Back up the file store too.")
        first = await client.review_plan(served, PLAN, title="Release 4.2", call_id="plan_1", wait_timeout=20, **RUN)
        reviewer.finish()
        reviewer = Reviewer(bob_api, "approve")
        second = await client.review_plan(served, PLAN + "4. Back up the file store\n", title="Release 4.2",
                                          call_id="plan_2", wait_timeout=20, **RUN)  # fmt: skip
        [approved] = reviewer.finish()
        return first, second, approved

    first, second, approved = asyncio.run(engine())

    assert first.changes_requested and not first.approved and first.feedback == "Back up the file store too."
    assert "asked for changes to the plan: Back up the file store too" in first.message
    assert first.approval["decision"]["action"] == "revise"
    assert second.approved and second.state == "approved" and second.reviewed_by == "bob@acme.test"
    assert approved["kind"] == "plan" and approved["status"] == "approved"


def test_the_async_client_asks_and_gets_the_same_answers(live_server, acme, support, bob_api):
    async def engine():
        client = AsyncHitlClient(live_server.url, make_token(acme, engine="release-engine"))
        served = await client.served(support.public_id)
        return await client.ask(served, QUESTIONS[2], call_id="ask_6", wait_timeout=20, **RUN)

    reviewer = Reviewer(bob_api, "answer", body={"answers": {"replicas": 4}})
    got = asyncio.run(engine())
    reviewer.finish()

    assert got.answered and got["replicas"] == 4
