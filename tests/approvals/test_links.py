"""One-click links and the request's page: GET never decides; POST decides once, as that reviewer."""

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
import requests
from django.test import Client
from django.urls import reverse

from approvals.engine.register import Sent, register
from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from approvals.review.links import link_url_for
from contacts.models import Delivery
from contacts.services import contact_create

from ..helpers import make_config, make_rule, make_token, publish, travel


@pytest.fixture
def world(acme, alice, bob, monkeypatch):
    monkeypatch.setenv("HITL_ACME_BOB_EMAIL", "bob@acme.test")
    config = make_config(acme)
    contact = contact_create(config=config, name="Bob", channel="email", channel_ref="${HITL_ACME_BOB_EMAIL}")
    rule = make_rule(config, notify=[contact.public_id])
    version = publish(config)
    make_token(acme, engine="support-engine")
    from workspaces.models import ApiToken

    approval = register(
        workspace=acme,
        engine_key=ApiToken.objects.get(workspace=acme, kind="engine"),
        sent=Sent(
            kind="gate",
            config_id=config.public_id,
            config_version=version.number,
            rule_id=rule.public_id,
            run_id="run_1",
            thread_id="thr_1",
            caller="support-bot",
            target="customer T-4821",
            operation="delete",
        ),
    ).approval
    delivery = Delivery.objects.get(approval=approval, event="requested")
    url = link_url_for(delivery=delivery, email="bob@acme.test")
    return {"approval": approval, "delivery": delivery, "path": url[url.index("/hitl/r/") :], "config": config}


def _status(approval) -> str:
    return ApprovalRequest.objects.get(pk=approval.pk).status


def test_it_shows_a_confirm_page_and_only_a_post_decides_as_that_reviewer(world, client):
    page = client.get(world["path"])
    assert page.status_code == 200
    body = page.content.decode()
    assert "Delete customer T-4821?" in body and "bob@acme.test" in body and "never decides" in body
    assert _status(world["approval"]) == "pending"

    done = client.post(world["path"], {"decision": "approve", "reason": "Checked the ticket"})
    assert done.status_code == 200
    approval = ApprovalRequest.objects.get(pk=world["approval"].pk)
    assert (approval.status, approval.decided_by_email, approval.reason) == (
        "approved",
        "bob@acme.test",
        "Checked the ticket",
    )

    again = client.post(world["path"], {"decision": "reject"})
    assert again.status_code == 403
    assert "already used" in again.content.decode()
    assert _status(world["approval"]) == "approved"


def test_a_get_and_head_storm_leaves_the_request_pending(world, live_server):
    url = live_server.url + world["path"]

    def hit(i: int) -> int:
        return (requests.get if i % 2 else requests.head)(url, timeout=30).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = list(pool.map(hit, range(60)))
    assert codes == [200] * 60
    assert _status(world["approval"]) == "pending"
    assert Delivery.objects.get(pk=world["delivery"].pk).link_used_at is None


@pytest.mark.parametrize(
    "spoil, reason, words",
    [
        (lambda path: path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB"), "tampered", "altered"),
        (lambda path: path.replace("/hitl/r/", "/hitl/r/x"), "tampered", "altered"),
    ],
)
def test_a_tampered_link_answers_403_saying_so(world, client, spoil, reason, words):
    answer = client.get(spoil(world["path"]))
    assert answer.status_code == 403
    assert f'data-reason="{reason}"' in answer.content.decode() and words in answer.content.decode()
    assert client.post(spoil(world["path"]), {"decision": "approve"}).status_code == 403
    assert _status(world["approval"]) == "pending"


def test_a_link_dies_when_the_request_is_decided_elsewhere(world, client, alice):
    approval_decide(approval=world["approval"], user=alice, decision="reject", reason="No")
    answer = client.get(world["path"])
    assert answer.status_code == 403
    assert "already rejected by alice@acme.test" in answer.content.decode()


def test_a_link_dies_when_the_request_expires(world, client):
    with travel(timedelta(hours=25)):
        expired = client.post(world["path"], {"decision": "approve"})
    assert expired.status_code == 403
    assert 'data-reason="expired"' in expired.content.decode()


def test_a_link_signed_for_another_call_answers_403(world, client):
    ApprovalRequest.objects.filter(pk=world["approval"].pk).update(call_digest="0" * 64)
    answer = client.post(world["path"], {"decision": "approve"})
    assert answer.status_code == 403
    assert "not the call the request now holds" in answer.content.decode()
    assert _status(world["approval"]) == "pending"


def test_the_request_page_shows_the_card_and_its_deliveries_behind_login(world, client, bob, charlie):
    url = reverse("approvals:detail", args=[world["approval"].public_id])
    assert client.get(url).status_code == 302  # the normal login

    client.force_login(bob)
    page = client.get(url).content.decode()
    assert f'id="card-{world["approval"].public_id}"' in page
    assert world["delivery"].public_id in page and "Requested" in page

    client.post(reverse("approvals:decide", args=[world["approval"].public_id]), {"decision": "approve", "next": url})
    decided = client.get(url).content.decode()
    assert "Approved by bob@acme.test" in decided

    outsider = Client()
    outsider.force_login(charlie)
    assert outsider.get(url).status_code == 404


def test_a_reason_over_the_limit_is_refused_on_the_confirm_page_and_the_link_still_works(world, client):
    refused = client.post(world["path"], {"decision": "reject", "reason": "x" * 2001})

    assert refused.status_code == 400
    assert "The reason is 2,001 characters; keep it to 2,000." in refused.content.decode()
    assert _status(world["approval"]) == "pending"
    assert Delivery.objects.get(pk=world["delivery"].pk).link_used_at is None  # refused, so not used up
    assert client.post(world["path"], {"decision": "reject", "reason": "x" * 2000}).status_code == 200
    assert _status(world["approval"]) == "rejected"
