"""The Rules tab's policy pieces as an admin sees them: the condition's live check, shadow counts, windows,
the dry run, proposals; and "Approve always" on a reviewer's card."""

import datetime

import pytest
from django.utils import timezone

from approvals.models import Grant
from rules.models import ConditionProposal, Rule, RuleDayCount

from ..approvals.engine_support import gate_body
from ..helpers import make_config, make_rule, publish

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def config(acme, alice):
    config = make_config(acme, pass_information_level="full")
    make_rule(config, kind="mcp_server", match="mcp_billing", condition="arguments.amount_cents > 10000")
    make_rule(config, kind="worker", match="*", mode="shadow", order=20)
    publish(config, alice)
    return config


def test_the_editor_checks_a_condition_as_it_is_typed(client, alice, bob, config):
    client.force_login(alice)
    url = f"/hitl/configs/{config.public_id}/condition-check/"
    bad = client.post(url, {"condition": "amount > 1"}, **HTMX)
    assert "names amount at position 1" in bad.text
    good = client.post(url, {"condition": 'caller == "x" && arguments.n > 1'}, **HTMX)
    assert "Compiles. Reads arguments, caller." in good.text
    editor = client.get(f"/hitl/configs/{config.public_id}/rules/add/")
    assert "Worked examples" in editor.text and "arguments.amount_cents &gt; 10000" in editor.text
    client.force_login(bob)
    assert client.post(url, {"condition": "true"}).status_code == 403


def test_the_editor_saves_a_condition_and_mode_and_refuses_a_bad_one_beside_it(client, alice, config):
    client.force_login(alice)
    form = {"kind": "cell", "which": "any", "point": "entry", "enabled": "on", "order": "30", "approvals_required": "1"}
    refused = client.post(f"/hitl/configs/{config.public_id}/rules/add/", {**form, "condition": "nope(1"})
    assert refused.status_code == 400 and "does not compile" in refused.text
    saved = client.post(
        f"/hitl/configs/{config.public_id}/rules/add/", {**form, "condition": 'caller == "x"', "mode": "shadow"}
    )
    assert saved.status_code == 302
    rule = Rule.objects.get(config=config, kind="cell")
    assert (rule.condition, rule.mode) == ('caller == "x"', "shadow")


def test_the_rules_tab_says_how_often_a_shadow_rule_would_have_asked_this_week(client, alice, config, engine_api):
    shadow_rule = Rule.objects.get(config=config, mode="shadow")
    for run in range(3):
        body = gate_body(config, rule_id=shadow_rule.public_id, run_id=f"run_{run}")
        assert engine_api.post("/api/v1/approvals", json=body).json()["shadow"] is True
    RuleDayCount.objects.create(
        config=config,
        rule_id=shadow_rule.public_id,
        kind="shadow",
        count=309,
        day=timezone.now().date() - datetime.timedelta(days=2),
    )
    client.force_login(alice)
    page = client.get(f"/hitl/configs/{config.public_id}/rules/")
    assert "would have asked 312 times this week" in page.text


def test_an_admin_opens_and_closes_a_window_from_the_rules_tab(client, alice, config):
    client.force_login(alice)
    rule = Rule.objects.get(config=config, kind="mcp_server")
    opened = client.post(
        f"/hitl/configs/{config.public_id}/windows/", {"rule_id": rule.public_id, "hours": "3", "reason": "Month end"}
    )
    assert opened.status_code == 302
    grant = Grant.objects.get(scope="rule")
    page = client.get(f"/hitl/configs/{config.public_id}/rules/")
    assert "Month end" in page.text and "Close window" in page.text
    grants_page = client.get("/hitl/grants/")
    assert grant.public_id in grants_page.text
    client.post(f"/hitl/configs/{config.public_id}/windows/{grant.public_id}/close/")
    grant.refresh_from_db()
    assert grant.revoked_at is not None
    assert "Close window" not in client.get(f"/hitl/configs/{config.public_id}/rules/").text


def test_the_dry_run_button_shows_the_numbers_and_a_chart(client, alice, config, engine_api):
    billing = Rule.objects.get(config=config, kind="mcp_server")
    for amount in (20_000, 5_000):
        engine_api.post(
            "/api/v1/approvals", json=gate_body(config, rule_id=billing.public_id, arguments={"amount_cents": amount})
        )
    billing.condition = ""
    billing.save()
    client.force_login(alice)
    partial = client.post(f"/hitl/configs/{config.public_id}/dry-run/", {"days": "7"}, **HTMX)
    assert partial.status_code == 200
    assert "would still ask 1, no longer ask 0, newly ask 1" in " ".join(partial.text.split())
    assert "<svg" in partial.text and "<script" not in partial.text and "style=" not in partial.text
    refused = client.post(f"/hitl/configs/{config.public_id}/dry-run/", {"days": "99"}, **HTMX)
    assert "days is from 1 to 30" in refused.text


def test_approve_always_on_the_card_puts_a_proposal_on_the_rules_tab(client, alice, bob, config, engine_api):
    billing = Rule.objects.get(config=config, kind="mcp_server")
    body = gate_body(config, rule_id=billing.public_id, arguments={"amount_cents": 20_000})
    approval_id = engine_api.post("/api/v1/approvals", json=body).json()["id"]
    client.force_login(bob)
    card = client.get("/hitl/approvals/")
    assert "Approve always" in card.text
    decided = client.post(
        f"/hitl/approvals/{approval_id}/decide/",
        {"always": "1", "propose_condition": "arguments.amount_cents > 50000"},
    )
    assert decided.status_code == 302
    proposal = ConditionProposal.objects.get()
    assert (proposal.rule_id, proposal.status) == (billing.pk, "open")
    client.force_login(alice)
    page = client.get(f"/hitl/configs/{config.public_id}/rules/")
    assert "Proposed conditions" in page.text and "arguments.amount_cents &gt; 50000" in page.text
    client.post(f"/hitl/configs/{config.public_id}/proposals/{proposal.public_id}/", {"action": "accept"})
    billing.refresh_from_db()
    assert billing.condition == "arguments.amount_cents > 50000"


def test_insights_show_what_shadow_rules_would_have_asked(client, alice, config, engine_api):
    shadow_rule = Rule.objects.get(config=config, mode="shadow")
    for run in range(2):
        engine_api.post("/api/v1/approvals", json=gate_body(config, rule_id=shadow_rule.public_id, run_id=f"r{run}"))
    client.force_login(alice)
    page = client.get("/hitl/insights/")
    assert "Shadow rules and conditions, this week" in page.text
    assert f'data-rule="{shadow_rule.public_id}"' in page.text
