"""Shadow rules and the dry run of a draft (API.md, "Policy"), against a history seeded through the engine API."""

import datetime

import pytest
from django.utils import timezone

from approvals.models import ApprovalRequest
from rules.models import RuleCount, RuleDayCount
from rules.services import rule_delete, rule_update

from ..approvals.engine_support import gate_body
from ..helpers import error_of, make_config, make_rule, publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def seeded(acme, alice, engine_api):
    """v1: r1 every delete; r2 refunds over 100 USD; r3 a shadow worker rule; r4 a cell rule. Then traffic."""
    config = make_config(acme, pass_information_level="full")
    r1 = make_rule(config, kind="delete", match="*", order=10)
    r2 = make_rule(config, kind="mcp_server", match="mcp_billing", condition="arguments.amount_cents > 10000", order=20)
    r3 = make_rule(config, kind="worker", match="*", mode="shadow", order=30)
    r4 = make_rule(config, kind="cell", match="*", order=40)
    publish(config, alice)

    def register(rule, **fields):
        response = engine_api.post("/api/v1/approvals", json=gate_body(config, rule_id=rule.public_id, **fields))
        assert response.status_code in (200, 201), response.json()
        return response

    for caller in ("support-bot", "ops-bot", "svc-cleanup"):  # 3 stored
        register(r1, caller=caller)
    for amount in (5_000, 20_000, 30_000, 8_000):  # 2 stored, 2 let through by the condition
        register(r2, arguments={"amount_cents": amount})
    shadow = [register(r3, run_id=f"run_{n}") for n in range(4)]  # 0 stored, 4 counted
    for _ in range(2):  # 2 stored
        register(r4)
    # Older than the days simulated: a request and a day's shadow count that must not be counted.
    old = register(r1, caller="support-bot", run_id="run_old").json()["id"]
    ApprovalRequest.objects.filter(public_id=old).update(created_at=timezone.now() - datetime.timedelta(days=10))
    RuleDayCount.objects.create(
        config=config,
        rule_id=r3.public_id,
        day=timezone.now().date() - datetime.timedelta(days=10),
        kind="shadow",
        count=100,
    )
    return config, (r1, r2, r3, r4), shadow


def test_a_shadow_rule_never_pauses_and_counts_per_rule_and_day(seeded):
    config, (_, _, r3, _), shadow = seeded
    for response in shadow:
        assert response.status_code == 200
        assert (response.json()["status"], response.json()["shadow"]) == ("allowed", True)
    assert not ApprovalRequest.objects.filter(rule_id=r3.public_id).exists()
    today = RuleDayCount.objects.get(config=config, rule_id=r3.public_id, day=timezone.now().date())
    assert (today.kind, today.count) == (RuleCount.SHADOW, 4)


def test_the_dry_run_of_the_draft_against_the_seeded_history(seeded, alice, alice_api):
    config, (r1, r2, r3, r4), _ = seeded
    rule_update(rule=r1, user=alice, condition='!caller.startsWith("svc-")')  # asks 2 of its 3, not svc-cleanup
    rule_update(rule=r2, user=alice, condition="")  # every refund: the 2 let through are newly asked
    rule_update(rule=r3, user=alice, mode="gate")  # the shadow rule goes live: its 4 are newly asked
    rule_delete(rule=r4, user=alice)  # its 2 are no longer asked

    response = alice_api.post(f"/api/v1/configs/{config.public_id}/simulate", json={"days": 7})
    assert response.status_code == 200, response.json()
    body = response.json()
    rules = {rule["rule_id"]: rule for rule in body["rules"]}
    counts = {
        rule_id: (rule["would_ask"], rule["no_longer_asked"], rule["newly_asked"]) for rule_id, rule in rules.items()
    }
    assert counts == {
        r1.public_id: (2, 1, 0),
        r2.public_id: (2, 0, 2),
        r3.public_id: (0, 0, 4),
        r4.public_id: (0, 2, 0),
    }
    assert rules[r4.public_id]["in_draft"] is False
    assert body["days"] == 7
    assert {key: body["total"][key] for key in ("would_ask", "no_longer_asked", "newly_asked")} == {
        "would_ask": 4,
        "no_longer_asked": 3,
        "newly_asked": 6,
    }
    assert body["total"]["asked_before"] == 7

    longer = alice_api.post(f"/api/v1/configs/{config.public_id}/simulate", json={"days": 30}).json()
    assert longer["total"]["asked_before"] == 8  # the old request is within 30 days
    assert longer["total"]["newly_asked"] == 106  # and so is the old day's shadow count


def test_the_dry_run_of_an_unchanged_draft_changes_nothing(seeded, alice_api):
    config, (r1, r2, r3, r4), _ = seeded
    body = alice_api.post(f"/api/v1/configs/{config.public_id}/simulate", json={"days": 1}).json()
    counts = {
        rule["rule_id"]: (rule["would_ask"], rule["no_longer_asked"], rule["newly_asked"]) for rule in body["rules"]
    }
    assert counts == {
        r1.public_id: (3, 0, 0),
        r2.public_id: (2, 0, 0),  # same condition: what it let through stays let through
        r3.public_id: (0, 0, 0),  # still a shadow rule
        r4.public_id: (2, 0, 0),
    }


def test_the_dry_run_refuses_days_out_of_range_and_non_admins(seeded, alice_api, bob_api, charlie_api):
    config = seeded[0]
    path = f"/api/v1/configs/{config.public_id}/simulate"
    for days in (0, 31, "seven", None):
        response = alice_api.post(path, json={"days": days})
        assert response.status_code == 400 and "days" in error_of(response)["fields"]
    assert bob_api.post(path, json={"days": 7}).status_code == 403
    assert charlie_api.post(path, json={"days": 7}).status_code == 404


def test_the_dry_run_is_one_query_over_the_requests(seeded, alice, django_assert_max_num_queries):
    from rules.simulate import config_simulate

    config, (r1, *_), _ = seeded
    rule_update(rule=r1, user=alice, condition='caller == "ops-bot"')
    # the draft's rules, the transaction's settings, one aggregate over the requests, two count reads
    with django_assert_max_num_queries(8):
        result = config_simulate(config=config, days=7)
    assert result["rules"][0]["would_ask"] == 1
