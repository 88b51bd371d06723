"""POST /integrations/slack/events over real HTTP: a reply in a request's thread becomes a comment.

The request's message is posted by the outbox to the fake Slack Web API on loopback, so the thread's ts is
the one Slack gave; the events are signed with the test secret as Slack signs them.
"""

import itertools
import json
import threading
import time

import pytest
import requests

from approvals.models import ApprovalRequest
from audit.models import AuditRecord
from collaboration.models import Comment
from integrations.models import SlackMessage
from tests.factories import make_approval
from tests.helpers import chat_posted, comments_via_api, error_of, make_config

from .conftest import ALICE_SLACK, BOB_SLACK, CHANNEL, CHARLIE_SLACK, sign

pytestmark = pytest.mark.usefixtures("fake_slack")

_ids = itertools.count(int(time.time() * 1000))


def reply(
    text: str, *, slack_user: str, thread_ts: str, channel: str = CHANNEL, event_id: str | None = None, **extra
) -> dict:
    """The event_callback Slack sends when someone replies in a thread of a channel the app is in."""
    n = next(_ids)
    return {
        "token": "legacy-verification-token",
        "team_id": "T0ACME",
        "api_app_id": "A0HITL",
        "type": "event_callback",
        "event_id": event_id or f"Ev{n}",
        "event_time": int(time.time()),
        "event": {
            "type": "message",
            "user": slack_user,
            "text": text,
            "ts": f"{int(time.time())}.{n % 1000000:06d}",
            "thread_ts": thread_ts,
            "parent_user_id": "U0HITLBOT",
            "channel": channel,
            "channel_type": "channel",
            "event_ts": f"{int(time.time())}.{n % 1000000:06d}",
            **extra,
        },
    }


def post_event(base_url: str, envelope: dict | str, *, retry: int | None = None, **signing) -> requests.Response:
    body = envelope if isinstance(envelope, str) else json.dumps(envelope)
    headers = {**sign(body, **signing), "Content-Type": "application/json"}
    if retry is not None:
        headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
    return requests.post(f"{base_url}/integrations/slack/events", data=body.encode(), headers=headers, timeout=10)


@pytest.fixture
def posted(slack_world):
    """A request whose message the outbox posted to #approvers: (the request, its Slack message)."""
    approval, messages = chat_posted(slack_world, target="customer T-4821")
    return approval, messages[CHANNEL]


def test_slack_answers_the_url_verification_with_its_challenge(live_server):
    response = post_event(live_server.url, {"token": "t", "challenge": "3eZbrw1aB", "type": "url_verification"})

    assert response.status_code == 200
    assert response.json() == {"challenge": "3eZbrw1aB"}


def test_a_reviewers_thread_reply_is_their_comment_on_the_request_and_decides_nothing(
    live_server, fake_slack, bob_api, alice, client, posted
):
    approval, message = posted
    said = "Is T-4821 the customer who wrote in &lt;yesterday&gt; &amp; today? \u202eevil"

    response = post_event(live_server.url, reply(said, slack_user=BOB_SLACK, thread_ts=message.ts))

    assert response.status_code == 200
    [comment] = comments_via_api(bob_api, approval)
    assert comment["author"] == "bob@acme.test"
    assert comment["via"] == "slack"
    assert comment["text"] == "Is T-4821 the customer who wrote in <yesterday> & today? \u202eevil"
    assert ApprovalRequest.objects.get(pk=approval.pk).status == "pending"
    record = AuditRecord.objects.get(action="approval.commented", object=approval.public_id)
    assert record.actor == "bob@acme.test"
    assert record.data["via"] == "slack" and record.data["comment_id"] == comment["id"]
    assert fake_slack.calls_to("chat.postEphemeral") == []  # nothing to explain
    client.force_login(alice)
    page = client.get(f"/hitl/approvals/{approval.public_id}/").content.decode()
    assert "via Slack" in page
    assert "&lt;yesterday&gt;" in page and "<yesterday>" not in page  # escaped through the one presenter
    assert "\u202e" not in page  # a bidi override is shown as its escape, never obeyed


def test_the_comment_is_counted_on_history_once_the_request_is_decided(live_server, alice_api, alice, client, posted):
    approval, message = posted
    post_event(live_server.url, reply("Checked the ticket.", slack_user=ALICE_SLACK, thread_ts=message.ts))
    decided = alice_api.post(f"/api/v1/approvals/{approval.public_id}/decision", json={"decision": "approve"})
    assert decided.status_code == 200, decided.text

    client.force_login(alice)
    html = client.get("/hitl/approvals/history/").content.decode()
    row = html[html.index(f'id="row-{approval.public_id}"') :]
    assert "1 comment<" in row[: row.index("</tr>")]


def test_slacks_retry_of_an_event_adds_the_comment_once(live_server, bob_api, posted):
    approval, message = posted
    event = reply("Once, please.", slack_user=BOB_SLACK, thread_ts=message.ts)

    first = post_event(live_server.url, event)
    # Slack signs each retry anew (its own timestamp), with the event's same event_id.
    again = post_event(live_server.url, event, retry=1, timestamp=int(time.time()) + 1)
    later = post_event(live_server.url, event, retry=2, timestamp=int(time.time()) + 2)

    assert [first.status_code, again.status_code, later.status_code] == [200, 200, 200]
    assert [c["text"] for c in comments_via_api(bob_api, approval)] == ["Once, please."]


def test_a_retry_racing_the_first_delivery_adds_the_comment_once(live_server, posted):
    approval, message = posted
    event = reply("Racing.", slack_user=BOB_SLACK, thread_ts=message.ts)
    start = threading.Barrier(2)
    answers = []

    def deliver(attempt: int) -> None:
        start.wait()
        answers.append(post_event(live_server.url, event, retry=attempt or None, timestamp=int(time.time()) + attempt))

    threads = [threading.Thread(target=deliver, args=(attempt,)) for attempt in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(answer.status_code for answer in answers) == [200, 200]
    assert Comment.objects.filter(approval=approval).count() == 1


@pytest.mark.parametrize(
    "extra",
    [
        {"bot_id": "B0HITL", "subtype": "bot_message"},  # our own reminder in the thread, or another app's
        {"bot_id": "B0OTHER"},
        {"subtype": "message_changed"},
        {"subtype": "message_deleted"},
        {"subtype": "channel_join"},
    ],
)
def test_bots_edits_and_other_subtypes_add_nothing(live_server, fake_slack, posted, extra):
    approval, message = posted

    response = post_event(live_server.url, reply("noise", slack_user=BOB_SLACK, thread_ts=message.ts, **extra))

    assert response.status_code == 200
    assert not Comment.objects.filter(approval=approval).exists()
    assert fake_slack.calls_to("users.info") == []


def test_a_message_that_is_not_a_reply_to_a_request_adds_nothing(live_server, fake_slack, posted):
    approval, message = posted
    top_level = reply("hello channel", slack_user=BOB_SLACK, thread_ts=message.ts)
    del top_level["event"]["thread_ts"]
    other_thread = reply("unrelated thread", slack_user=BOB_SLACK, thread_ts="1700000000.000001")

    for event in (top_level, other_thread):
        assert post_event(live_server.url, event).status_code == 200

    assert not Comment.objects.filter(approval=approval).exists()
    assert fake_slack.calls_to("users.info") == []


def test_an_unknown_slack_user_adds_nothing_and_is_told_why_in_the_thread(live_server, fake_slack, posted):
    approval, message = posted

    response = post_event(live_server.url, reply("let me in", slack_user="U0STRANGER", thread_ts=message.ts))

    assert response.status_code == 200  # answered, so Slack does not retry
    assert not Comment.objects.filter(approval=approval).exists()
    [told] = fake_slack.calls_to("chat.postEphemeral")
    assert told["user"] == "U0STRANGER" and told["channel"] == CHANNEL and told["thread_ts"] == message.ts
    assert f"not added as a comment on {approval.public_id}" in told["text"]
    assert "cannot tell which member you are" in told["text"]


def test_a_member_of_another_workspace_cannot_comment_from_a_thread_they_can_read(live_server, fake_slack, posted):
    # charlie reads #approvers and has a portal account, but only in globex.
    approval, message = posted

    post_event(live_server.url, reply("globex here", slack_user=CHARLIE_SLACK, thread_ts=message.ts))

    assert not Comment.objects.filter(approval=approval).exists()
    [told] = fake_slack.calls_to("chat.postEphemeral")
    assert "charlie@globex.test is not a reviewer of acme" in told["text"].lower()


def test_someone_who_cannot_comment_is_told_why_once_per_thread_not_under_every_reply(
    live_server, fake_slack, posted, slack_world
):
    approval, message = posted
    other, other_messages = chat_posted(slack_world, target="customer T-9000")
    other_message = other_messages[CHANNEL]

    for text in ("globex here", "hello?", "anyone?"):
        post_event(live_server.url, reply(text, slack_user=CHARLIE_SLACK, thread_ts=message.ts))
    post_event(live_server.url, reply("let me in", slack_user="U0STRANGER", thread_ts=message.ts))
    post_event(live_server.url, reply("and here", slack_user=CHARLIE_SLACK, thread_ts=other_message.ts))

    told = [(call["user"], call["thread_ts"]) for call in fake_slack.calls_to("chat.postEphemeral")]
    # charlie once under each request's message, the stranger once under his: nothing more.
    assert sorted(told) == sorted(
        [(CHARLIE_SLACK, message.ts), ("U0STRANGER", message.ts), (CHARLIE_SLACK, other_message.ts)]
    )
    assert not Comment.objects.filter(approval__in=[approval, other]).exists()


def test_a_thread_of_one_workspace_never_comments_on_anothers_request(live_server, fake_slack, globex, charlie, posted):
    acme_request, acme_message = posted
    globex_request = make_approval(make_config(globex, "Globex agent"))
    globex_message = SlackMessage.objects.create(approval=globex_request, channel="C0GLOBEX", ts="1764480000.777777")

    # bob (acme) replies under globex's request; charlie (globex) names globex's ts in acme's channel.
    post_event(
        live_server.url, reply("acme here", slack_user=BOB_SLACK, thread_ts=globex_message.ts, channel="C0GLOBEX")
    )
    post_event(live_server.url, reply("wrong channel", slack_user=CHARLIE_SLACK, thread_ts=globex_message.ts))
    post_event(live_server.url, reply("globex here", slack_user=CHARLIE_SLACK, thread_ts=acme_message.ts))

    assert not Comment.objects.filter(approval__in=[acme_request, globex_request]).exists()
    # charlie's own reply under globex's request is his comment there, and nowhere else.
    post_event(
        live_server.url, reply("ours", slack_user=CHARLIE_SLACK, thread_ts=globex_message.ts, channel="C0GLOBEX")
    )
    assert list(Comment.objects.values_list("approval_id", "author_email")) == [
        (globex_request.pk, "charlie@globex.test")
    ]


def test_a_reply_over_the_comment_limit_adds_nothing_and_says_why(live_server, fake_slack, posted):
    approval, message = posted

    post_event(live_server.url, reply("x" * 2001, slack_user=BOB_SLACK, thread_ts=message.ts))

    assert not Comment.objects.filter(approval=approval).exists()
    [told] = fake_slack.calls_to("chat.postEphemeral")
    assert "keep it to 2,000" in told["text"]


def test_a_decided_request_still_takes_comments_from_its_thread(live_server, alice_api, bob_api, posted):
    approval, message = posted
    alice_api.post(f"/api/v1/approvals/{approval.public_id}/decision", json={"decision": "approve"})

    post_event(live_server.url, reply("Approved because of ticket 991.", slack_user=ALICE_SLACK, thread_ts=message.ts))

    assert [c["author"] for c in comments_via_api(bob_api, approval)] == ["alice@acme.test"]
    assert ApprovalRequest.objects.get(pk=approval.pk).decided_by_email == "alice@acme.test"


def test_it_refuses_a_forged_signature_before_reading_the_event(live_server, fake_slack, posted):
    approval, message = posted

    response = post_event(
        live_server.url, reply("forged", slack_user=BOB_SLACK, thread_ts=message.ts), secret="not-the-secret"
    )

    assert response.status_code == 401
    assert error_of(response)["code"] == "signature_invalid"
    assert not Comment.objects.filter(approval=approval).exists()
    assert fake_slack.calls_to("users.info") == []  # refused before Slack is even asked who it is


@pytest.mark.parametrize(
    "body",
    [
        "not json",
        "[1, 2]",
        '{"type": 7}',
        '{"type": "url_verification"}',
        '{"type": "event_callback", "event_id": "Ev1"}',
        '{"type": "event_callback", "event": {"type": "message"}}',
        '{"type": "event_callback", "event": [], "event_id": "Ev1"}',
        '{"type": "event_callback", "event": {}, "event_id": ""}',
        '{"type": "event_',
    ],
)
def test_a_signed_body_that_is_not_an_event_envelope_is_a_400_not_a_500(live_server, body):
    response = post_event(live_server.url, body)

    assert response.status_code == 400
    assert error_of(response)["code"] == "bad_payload"


def test_other_envelopes_and_events_are_acknowledged(live_server, posted):
    approval, message = posted
    mention = reply("hi", slack_user=BOB_SLACK, thread_ts=message.ts)
    mention["event"]["type"] = "app_mention"

    assert post_event(live_server.url, {"type": "app_rate_limited", "minute_rate_limited": 1}).json() == {}
    assert post_event(live_server.url, mention).status_code == 200
    assert not Comment.objects.filter(approval=approval).exists()


def test_the_openapi_schema_describes_the_endpoint_as_it_answers(live_server):
    schema = requests.get(f"{live_server.url}/api/schema/", params={"format": "json"}, timeout=30).json()
    operation = schema["paths"]["/integrations/slack/events"]["post"]

    assert {"200", "400", "401", "413"} <= set(operation["responses"])
    assert str(post_event(live_server.url, "[]").status_code) in operation["responses"]
