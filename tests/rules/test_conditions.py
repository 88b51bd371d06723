"""Rule conditions (API.md, "Policy"): compiled when saved, frozen, evaluated at registration, failing closed."""

import pytest

from approvals.models import ApprovalRequest
from rules.models import RuleCount, RuleDayCount

from ..approvals.engine_support import gate_body
from ..helpers import error_of, make_config, make_rule, publish

pytestmark = pytest.mark.django_db


@pytest.fixture
def config(acme):
    return make_config(acme, pass_information_level="full")


def rules_path(config) -> str:
    return f"/api/v1/configs/{config.public_id}/rules"


def published_with(config, user, condition: str, **fields):
    rule = make_rule(config, kind="mcp_server", match="mcp_billing", condition=condition, **fields)
    publish(config, user)
    return rule


def register(engine_api, config, **overrides):
    return engine_api.post("/api/v1/approvals", json=gate_body(config, **overrides))


def test_it_saves_a_condition_and_freezes_it_in_the_version(alice_api, config):
    condition = 'arguments.amount_cents > 10000 && !caller.startsWith("svc-")'
    response = alice_api.post(rules_path(config), json={"kind": "delete", "match": "*", "condition": condition})
    assert response.status_code == 201, response.json()
    assert response.json()["condition"] == condition
    assert response.json()["mode"] == "gate"
    published = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", json={})
    assert published.status_code == 201
    assert published.json()["rules"][0]["condition"] == condition


@pytest.mark.parametrize(
    ("condition", "position", "words"),
    [
        ("arguments.amount_cents > ", 26, "does not compile at position 26"),
        ("amount > 100", 1, "names amount at position 1"),
        ('caller == "x" && secret_env == "y"', 18, "names secret_env at position 18"),
    ],
)
def test_it_refuses_a_condition_naming_the_position(alice_api, config, condition, position, words):
    response = alice_api.post(rules_path(config), json={"kind": "delete", "match": "*", "condition": condition})
    assert response.status_code == 400
    message = error_of(response)["fields"]["condition"]
    message = message[0] if isinstance(message, list) else message
    assert words in message
    assert not config.rules.exists()


def test_it_refuses_a_condition_over_its_length_and_a_runaway_one(alice_api, config):
    too_long = "true && " * 300 + "true"
    deep = "(" * 40 + "true" + ")" * 40
    nested = "arguments.rows.all(a, arguments.rows.all(b, a == b))"
    for condition, words in [(too_long, "2000"), (deep, "nests deeper"), (nested, "comprehension inside another")]:
        response = alice_api.post(rules_path(config), json={"kind": "delete", "match": "*", "condition": condition})
        assert response.status_code == 400, condition
        assert words in str(error_of(response)["fields"]["condition"])


def test_a_macro_may_read_the_name_it_binds(alice_api, config):
    condition = 'arguments.rows.exists(r, r.table == "users")'
    response = alice_api.post(rules_path(config), json={"kind": "delete", "match": "*", "condition": condition})
    assert response.status_code == 201, response.json()


@pytest.mark.parametrize(
    ("condition", "asks"),
    [
        ('target == "mcp_billing"', True),
        ('target == "somebody else"', False),
        ('operation.startsWith("del")', True),
        ('caller == "support-bot"', True),
        ('caller.startsWith("svc-")', False),
        ('requested_by.endsWith("@acme.test")', True),
        ('requested_by == ""', False),
        ('run_id == "run_1"', True),
        ('run_id in ["run_7", "run_8"]', False),
        ("arguments.amount_cents > 10000", True),  # int
        ("arguments.amount_cents > 30000", False),
        ("arguments.rate > 0.5", True),  # double
        ('arguments.currency == "USD"', True),  # string
        ("arguments.force", True),  # bool
        ("arguments.note == null", True),  # null
        ('"vip" in arguments.tags', True),  # list
        ("size(arguments.tags) > 3", False),
        ('arguments.customer.tier == "gold"', True),  # map
        ("has(arguments.dry_run) && arguments.dry_run", False),
        ('now > timestamp("2020-01-01T00:00:00Z")', True),  # timestamp
        ('now < timestamp("2020-01-01T00:00:00Z")', False),
        ("arguments.rows.exists(r, r.table == 'users')", True),
    ],
)
def test_a_condition_over_every_variable_and_type_decides_whether_the_rule_asks(
    acme, alice, config, engine_api, condition, asks
):
    rule = published_with(config, alice, condition)
    arguments = {
        "amount_cents": 25_000,
        "rate": 0.75,
        "currency": "USD",
        "force": True,
        "note": None,
        "tags": ["vip", "eu"],
        "customer": {"tier": "gold"},
        "rows": [{"table": "orders"}, {"table": "users"}],
    }
    response = register(engine_api, config, rule_id=rule.public_id, arguments=arguments, requested_by="ann@acme.test")
    if asks:
        assert response.status_code == 201, response.json()
        assert response.json()["status"] == "pending"
        assert response.json()["condition_error"] is None
    else:
        assert response.status_code == 200, response.json()
        assert response.json()["status"] == "allowed"
        assert response.json()["shadow"] is False
        assert rule.public_id in response.json()["notice"]
        assert not ApprovalRequest.objects.exists()  # nothing stored …
        [count] = RuleDayCount.objects.all()  # … but the rule's count for the day
        assert (count.rule_id, count.kind, count.count) == (rule.public_id, RuleCount.ALLOWED, 1)


def test_a_condition_that_errors_fails_closed_with_the_error_on_the_card(acme, alice, bob, config, engine_api, client):
    rule = published_with(config, alice, "arguments.amount_cents > 10000")
    response = register(engine_api, config, rule_id=rule.public_id, arguments={"customer_id": "T-4821"})
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["status"] == "pending"
    assert "amount_cents" in body["condition_error"]
    client.force_login(bob)
    page = client.get(f"/hitl/approvals/{body['id']}/")
    assert "Condition failed" in page.text and "amount_cents" in page.text
    assert not RuleDayCount.objects.exists()


def test_a_condition_on_arguments_below_level_full_fails_closed(acme, alice, engine_api):
    config = make_config(acme, pass_information_level="summary")
    rule = published_with(config, alice, "arguments.amount_cents > 10000")
    response = register(engine_api, config, rule_id=rule.public_id, arguments=...)
    assert response.status_code == 201, response.json()
    assert response.json()["condition_error"]


def test_a_condition_giving_no_boolean_fails_closed(acme, alice, config, engine_api):
    rule = published_with(config, alice, "arguments.amount_cents + 1")
    response = register(engine_api, config, rule_id=rule.public_id, arguments={"amount_cents": 5})
    assert response.status_code == 201
    assert "not true or false" in response.json()["condition_error"]


def test_a_condition_over_its_time_limit_fails_closed(acme, alice, config, engine_api, settings):
    settings.HITL_CONDITION_TIME_LIMIT_MS = 0  # any evaluation takes longer than no time at all
    rule = published_with(config, alice, "arguments.rows.exists(r, r.table == 'users')")
    rows = [{"table": f"t{i}"} for i in range(2000)]
    response = register(engine_api, config, rule_id=rule.public_id, arguments={"rows": rows})
    assert response.status_code == 201
    assert "longer than its limit" in response.json()["condition_error"]


def test_a_huge_argument_string_is_evaluated_within_bounds(acme, alice, config, engine_api):
    rule = published_with(config, alice, 'arguments.text.contains("needle")')
    response = register(engine_api, config, rule_id=rule.public_id, arguments={"text": "hay" * 20_000})
    assert response.status_code == 200
    assert response.json()["status"] == "allowed"


def test_the_condition_is_compiled_once_per_frozen_version(acme, alice, config, engine_api, monkeypatch):
    from rules import conditions

    rule = published_with(config, alice, 'caller == "support-bot"')
    compiled = []
    original = conditions.condition_compile
    monkeypatch.setattr(conditions, "condition_compile", lambda source: compiled.append(source) or original(source))
    for run in ("run_1", "run_2", "run_3"):
        assert register(engine_api, config, rule_id=rule.public_id, run_id=run).status_code == 201
    assert len(compiled) <= 1
