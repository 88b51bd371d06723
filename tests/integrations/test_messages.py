"""The Slack message of a request: what it says, where it goes, and how it follows the request to its end."""

from datetime import timedelta

import pytest

from approvals.expiry.expire import approval_sweep_overdue
from approvals.models import ApprovalRequest
from approvals.review.decide import approval_decide
from contacts.transports import TransportError
from integrations import blocks, slack
from integrations.models import SlackMessage
from integrations.outbound import slack_message_post, slack_messages_refresh
from tests.factories import make_approval, make_token_cap
from tests.helpers import make_config, travel

from .conftest import BOT_TOKEN, CHANNEL, CHANNEL_REF

pytestmark = pytest.mark.usefixtures("fake_slack")


def texts(message_blocks: list[dict]) -> str:
    """Every text a person reads in the message, in order."""
    found = []
    for block in message_blocks:
        if "text" in block:
            found.append(block["text"]["text"])
        found += [item["text"] for item in block.get("fields", [])]
        found += [
            item["text"] for item in block.get("elements", []) if "text" in item and isinstance(item["text"], str)
        ]
    return "\n".join(found)


def markup(message_blocks: list[dict]) -> str:
    """Only the mrkdwn texts: where Slack would turn <…> into a mention or a link (plain_text never does)."""
    found = []
    for block in message_blocks:
        items = [block.get("text") or {}, *block.get("fields", []), *block.get("elements", [])]
        found += [item["text"] for item in items if isinstance(item, dict) and item.get("type") == "mrkdwn"]
    return "\n".join(found)


def buttons(message_blocks: list[dict]) -> list[tuple[str, str]]:
    return [
        (element["text"]["text"], element["action_id"])
        for block in message_blocks
        if block["type"] == "actions"
        for element in block["elements"]
    ]


def post(approval) -> SlackMessage:
    return slack_message_post(approval=approval, channel=slack.channel_for(CHANNEL_REF), contact_id="con_test")


def test_a_requested_message_carries_the_cards_facts_and_approve_rightmost(fake_slack, request_for_deletion):
    message = post(request_for_deletion)

    [sent] = fake_slack.calls_to("chat.postMessage")
    assert sent["channel"] == CHANNEL
    assert sent["text"] == "Approve: Delete customer T-4821?"
    assert fake_slack.calls[-1].authorization == f"Bearer {BOT_TOKEN}"
    shown = texts(sent["blocks"])
    config = request_for_deletion.config
    for fact in [
        "Delete customer T-4821",  # the title
        "*Caller*\nsupport-bot",
        "*Target*\ncustomer T-4821",
        "*Boundary*\nDelete · before the call",
        "Deleting a customer is final.",  # the rule's message
        f"|{config.public_id}@1 · {config.name}>",
        "*Level*\nSummary",
        "Customer asked to close the account",  # the summary the level allows
        "*Expires*\n",
        f"<https://portal.example/hitl/approvals/{request_for_deletion.public_id}/|Open in portal>",
    ]:
        assert fact in shown, fact
    # Approve rightmost; "I'm on it" (a claim, never a decision) on a row of its own under them.
    assert buttons(sent["blocks"]) == [("Reject", "reject"), ("Approve", "approve"), ("I’m on it", "hitl_claim")]
    assert (message.channel, message.ts, message.shown_status) == (CHANNEL, "1764480000.000001", "pending")


def test_arguments_are_shown_only_where_the_level_passed_them(fake_slack, acme):
    full = make_approval(
        make_config(acme, name="Full", pass_information_level="full"),
        level="full",
        arguments={"customer": "T-4821", "hard": True},
    )
    none = make_approval(make_config(acme, name="None", pass_information_level="none"), level="none")

    full_text = texts(blocks.request_blocks(full))
    none_text = texts(blocks.request_blocks(none))

    assert '"customer": "T-4821"' in full_text
    assert "*Arguments*" not in none_text and "*Summary*" not in none_text
    assert "level none" in none_text  # says why there is nothing more to read


def test_a_token_cap_message_offers_stop_the_run_and_proceed_past_cap(fake_slack, config):
    breach = make_token_cap(config, tokens_used=51_200, token_cap=50_000)

    post(breach)

    [sent] = fake_slack.calls_to("chat.postMessage")
    assert "*Tokens used*\n51,200 of 50,000" in texts(sent["blocks"])
    assert buttons(sent["blocks"]) == [
        ("Stop the run", "stop"),
        ("Proceed past cap", "proceed"),
        ("I’m on it", "hitl_claim"),
    ]


def test_an_engines_text_cannot_ping_the_channel_or_forge_a_link(fake_slack, config):
    sneaky = make_approval(config, caller="<!channel> bot", target="<https://evil.example|your bank> & more")

    post(sneaky)

    shown = markup(fake_slack.calls_to("chat.postMessage")[0]["blocks"])
    assert "<!channel>" not in shown and "<https://evil.example" not in shown
    assert "&lt;!channel&gt; bot" in shown
    assert "&lt;https://evil.example|your bank&gt; &amp; more" in shown


def test_posting_twice_to_a_channel_keeps_one_message(fake_slack, request_for_deletion):
    first = post(request_for_deletion)
    second = post(request_for_deletion)

    assert first.pk == second.pk
    assert len(fake_slack.calls_to("chat.postMessage")) == 1


def test_a_decision_anywhere_removes_the_buttons_and_names_who_decided(fake_slack, bob, request_for_deletion):
    post(request_for_deletion)
    approval_decide(approval=request_for_deletion, user=bob, decision="reject", reason="Legal hold")

    assert slack_messages_refresh(approval=request_for_deletion) == 1

    [update] = fake_slack.calls_to("chat.update")
    assert (update["channel"], update["ts"]) == (CHANNEL, "1764480000.000001")
    assert buttons(update["blocks"]) == []
    shown = texts(update["blocks"])
    assert "*Rejected by bob@acme.test at " in shown
    assert "Reason: Legal hold" in shown
    assert "Open in portal" in shown
    assert SlackMessage.objects.get().shown_status == "rejected"


def test_a_refresh_of_an_up_to_date_message_calls_slack_no_more(fake_slack, bob, request_for_deletion):
    post(request_for_deletion)
    approval_decide(approval=request_for_deletion, user=bob, decision="approve")
    slack_messages_refresh(approval=request_for_deletion)

    assert slack_messages_refresh(approval=request_for_deletion) == 0
    assert len(fake_slack.calls_to("chat.update")) == 1


def test_an_expired_request_says_nobody_answered(fake_slack, config):
    approval = make_approval(config, ttl=timedelta(minutes=5))
    post(approval)

    with travel(timedelta(minutes=6)):
        approval_sweep_overdue()
        slack_messages_refresh(approval=approval)

    [update] = fake_slack.calls_to("chat.update")
    assert "*Expired — nobody answered; counted as rejected*" in texts(update["blocks"])
    assert buttons(update["blocks"]) == []
    assert ApprovalRequest.objects.get(pk=approval.pk).status == "expired"


def test_slacks_429_is_a_retry_after_its_retry_after(fake_slack, request_for_deletion):
    fake_slack.throttle("chat.postMessage", retry_after=7)

    with pytest.raises(slack.SlackError) as refused:
        post(request_for_deletion)

    assert refused.value.retry_after == 7
    assert not refused.value.permanent
    assert SlackMessage.objects.count() == 0  # nothing remembered: the retry posts it
    post(request_for_deletion)
    assert SlackMessage.objects.count() == 1


def test_a_channel_slack_refuses_for_good_is_a_permanent_failure(fake_slack, request_for_deletion):
    fake_slack.fail("chat.postMessage", "channel_not_found")

    with pytest.raises(slack.SlackError) as refused:
        post(request_for_deletion)

    assert refused.value.permanent
    assert refused.value.message == "Slack refused chat.postMessage: channel_not_found"


def test_an_unset_channel_variable_is_named_and_its_value_never_shown(fake_slack, monkeypatch):
    monkeypatch.delenv("HITL_ACME_SLACK_APPROVERS")
    with pytest.raises(TransportError) as unset:
        slack.channel_for(CHANNEL_REF)
    assert unset.value.message == "HITL_ACME_SLACK_APPROVERS is not set" and unset.value.permanent

    monkeypatch.setenv("HITL_ACME_SLACK_APPROVERS", "https://hooks.slack.com/services/T0/B0/secret")
    with pytest.raises(slack.SlackError) as wrong:
        slack.channel_for(CHANNEL_REF)
    assert "secret" not in wrong.value.message and "hooks.slack.com" not in wrong.value.message


def test_without_a_bot_token_nothing_is_sent_and_the_error_says_which_variable(
    fake_slack, settings, request_for_deletion
):
    settings.HITL_SLACK_BOT_TOKEN = ""

    with pytest.raises(slack.SlackError) as refused:
        post(request_for_deletion)

    assert refused.value.message == "HITL_SLACK_BOT_TOKEN is not set"
    assert fake_slack.calls == []


def test_control_and_bidi_characters_are_shown_not_obeyed(fake_slack, config):
    disguised = make_approval(config, caller="bot\r\x1b[2K", target="prod_db.\u202egnp.tmp_")

    post(disguised)

    [sent] = fake_slack.calls_to("chat.postMessage")
    shown = texts(sent["blocks"])
    assert "\u202e" not in shown and "\x1b" not in shown and "\r" not in shown
    assert "prod_db.\\u202egnp.tmp_" in shown
    assert "bot\\r\\x1b[2K" in shown
