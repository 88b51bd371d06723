"""End to end with a real django-q2 cluster: an engine registers, the cluster posts the message to
Slack, a reviewer clicks Approve there, and the cluster updates the message."""

from collections.abc import Iterator

import pytest

from approvals.models import ApprovalRequest
from contacts.services import contact_create
from integrations.models import SlackMessage
from tests.helpers import Api, make_config, make_rule, make_token, publish
from tests.loopback import Cluster, wait_for

from .conftest import BOB_SLACK, BOT_TOKEN, CHANNEL, CHANNEL_REF, click, post_signed


def wait_until(predicate, what: str) -> None:
    wait_for(predicate, timeout=30, what=what, every=0.05)


@pytest.fixture
def cluster(fake_slack) -> Iterator[Cluster]:
    running = Cluster(
        HITL_SLACK_API_URL=fake_slack.url,
        HITL_SLACK_BOT_TOKEN=BOT_TOKEN,
        HITL_ACME_SLACK_APPROVERS=CHANNEL,
        HITL_BASE_URL="https://portal.example",
        Q_WORKERS="1",
    ).start()
    try:
        yield running
    finally:
        running.stop()


def test_a_request_goes_to_slack_is_approved_there_and_the_message_follows(live_server, fake_slack, acme, cluster):
    config = make_config(acme, pass_information_level="summary")
    approvers = contact_create(config=config, name="#approvers", channel="slack", channel_ref=CHANNEL_REF)
    rule = make_rule(config, message="Deleting a customer is final.", notify=[approvers.public_id])
    version = publish(config)
    engine = Api(live_server.url, make_token(acme, engine="support-engine"))

    registered = engine.post(
        "/api/v1/approvals",
        json={
            "kind": "gate",
            "config_id": config.public_id,
            "config_version": version.number,
            "rule_id": rule.public_id,
            "run_id": "run_1",
            "thread_id": "thr_1",
            "caller": "support-bot",
            "target": "customer T-4821",
            "operation": "delete",
        },
    )
    assert registered.status_code == 201
    approval = ApprovalRequest.objects.get(public_id=registered.json()["id"])
    wait_until(lambda: SlackMessage.objects.filter(approval=approval).exists(), "the cluster to post the message")
    [posted] = fake_slack.calls_to("chat.postMessage")
    assert [e["action_id"] for b in posted["blocks"] if b["type"] == "actions" for e in b["elements"]] == [
        "reject",
        "approve",
        "hitl_claim",
    ]

    clicked = post_signed(live_server.url, click(approval, "approve", slack_user=BOB_SLACK))

    assert clicked.status_code == 200
    polled = engine.get(f"/api/v1/approvals/{approval.public_id}").json()
    assert polled["status"] == "approved" and polled["decision"]["decided_by"] == "bob@acme.test"
    wait_until(lambda: fake_slack.calls_to("chat.update"), "the cluster to update the message")
    update = fake_slack.calls_to("chat.update")[0]
    assert (update["channel"], update["ts"]) == (CHANNEL, SlackMessage.objects.get().ts)
    assert not any(block["type"] == "actions" for block in update["blocks"])
    assert "Approved by bob@acme.test at " in str(update["blocks"])
    wait_until(lambda: SlackMessage.objects.get().shown_status == "approved", "the message to be recorded as updated")
