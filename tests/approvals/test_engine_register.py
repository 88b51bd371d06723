"""POST /api/v1/approvals (engines): registration against the frozen version, refusals, inert, idempotency."""

import hashlib
import json
import threading
from datetime import datetime, timedelta

import pytest
import requests

from approvals.engine.digest import call_digest
from approvals.models import ApprovalRequest
from approvals.presenters.api import approval_as_dict
from rules import services as rule_services
from workspaces.models import ApiToken
from workspaces.services import token_revoke, workspace_set_plan

from ..helpers import Api, error_of, make_config, make_rule, make_token, publish
from .engine_support import bulk_requests, count_queries, gate_body, make_support_config, rule_ids, token_cap_body

INERT = {"status": "inert", "notice": "HITL: inert (Free plan or no enabled rules) — the call may proceed"}


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_it_registers_a_gate_request_with_boundary_point_and_message_from_the_frozen_rule(engine_api, support):
    # What the engine says about the boundary is ignored: the frozen rule decides.
    body = gate_body(support, boundary="cell", point="exit", message="trust me")

    response = engine_api.post("/api/v1/approvals", json=body)

    assert response.status_code == 201, response.text
    approval = response.json()
    assert approval["id"].startswith("apr_")
    assert approval["status"] == "pending"
    assert approval["kind"] == "gate"
    assert (approval["config_id"], approval["config_version"]) == (support.public_id, 1)
    assert approval["rule_id"] == rule_ids(support)[0]
    assert (approval["boundary"], approval["point"]) == ("delete", "entry")
    assert approval["message"] == "Deletes of customer data need a second pair of eyes."
    assert approval["pass_information_level"] == "full"
    assert approval["summary"] == "Delete the customer record"
    assert approval["arguments"] == {"customer_id": "T-4821"}
    assert approval["decision"] is None and approval["execution"] is None
    lifetime = _time(approval["expires_at"]) - _time(approval["created_at"])
    assert lifetime == timedelta(hours=24)
    stored = ApprovalRequest.objects.get()
    assert stored.public_id == approval["id"] and stored.engine_key.name == "support-engine"


def test_it_computes_call_digest_exactly_as_api_md_says(engine_api, support):
    arguments = {"note": "café ☕", "ids": [3, 1, 2], "nested": {"b": 1, "a": None}}
    body = gate_body(support, target="customer Zoë", operation="delete", arguments=arguments)

    approval = engine_api.post("/api/v1/approvals", json=body).json()

    canonical = json.dumps(
        {"target": "customer Zoë", "operation": "delete", "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    assert approval["call_digest"] == hashlib.sha256(canonical.encode("utf-8")).hexdigest()
    without = engine_api.post("/api/v1/approvals", json=gate_body(support, run_id="r2", arguments=...)).json()
    assert without["call_digest"] == call_digest(target="customer T-4821", operation="delete", arguments=None)
    assert without["arguments"] is None


def test_it_reads_back_exactly_what_was_registered(engine_api, support):
    # The poll's hand-written SELECT must give back what the registration stored, JSON and times alike.
    arguments = {"note": "café ☕", "ids": [3, 1, 2], "nested": {"b": 1, "a": None}, "flag": False}
    registered = engine_api.post(
        "/api/v1/approvals", json=gate_body(support, target="customer Zoë", arguments=arguments)
    ).json()

    read = engine_api.get(f"/api/v1/approvals/{registered['id']}").json()

    assert read == registered
    assert read["arguments"] == arguments
    # And the ORM reads the row of the hand-written INSERT as the engine was answered (JSON as JSON).
    stored = ApprovalRequest.objects.select_related("config").get(public_id=registered["id"])
    assert approval_as_dict(stored) == registered
    assert stored.arguments == arguments and stored.engine_key.name == "support-engine"


def test_the_hand_written_insert_refuses_a_request_that_is_not_new(acme, support):
    """It writes a new request's undecided, unreported columns as literals: one that holds anything
    else there must go through the ORM, not be stored as pending."""
    from approvals.engine.insert import insert_request

    make_token(acme, engine="support-engine")
    key = ApiToken.objects.get(workspace=acme, kind="engine")
    decided = ApprovalRequest(
        workspace=acme, engine_key=key, config=support, config_version=1, status="approved", run_id="run_x"
    )
    with pytest.raises(ValueError, match="status"):
        insert_request(decided, engine_key=key, now=decided.created_at)
    assert not ApprovalRequest.objects.filter(run_id="run_x").exists()


def test_it_checks_against_the_version_named_not_the_draft(engine_api, alice, support):
    rule = support.rules.get(kind="delete")
    rule_services.rule_update(rule=rule, message="A newer message in the draft")
    draft_only = make_rule(support, kind="cell", match="*")

    approval = engine_api.post("/api/v1/approvals", json=gate_body(support)).json()
    assert approval["message"] == "Deletes of customer data need a second pair of eyes."

    response = engine_api.post("/api/v1/approvals", json=gate_body(support, rule_id=draft_only.public_id))
    assert response.status_code == 400
    error = error_of(response)
    assert "rule_id" in error["fields"]
    assert f"{support.public_id}@1" in error["fields"]["rule_id"]


def test_it_refuses_a_rule_disabled_in_that_version(engine_api, support):
    response = engine_api.post("/api/v1/approvals", json=gate_body(support, rule=2))

    assert response.status_code == 400
    assert "disabled" in error_of(response)["fields"]["rule_id"]


def test_it_honours_a_shorter_ttl_and_refuses_a_longer_one(engine_api, support):
    short = engine_api.post("/api/v1/approvals", json=gate_body(support, ttl_seconds=90)).json()
    assert _time(short["expires_at"]) - _time(short["created_at"]) == timedelta(seconds=90)

    for ttl, words in ((86_401, "never lengthen"), (0, "positive"), (-5, "positive"), ("60", "integer")):
        response = engine_api.post("/api/v1/approvals", json=gate_body(support, run_id="r2", ttl_seconds=ttl))
        assert response.status_code == 400, ttl
        assert words in error_of(response)["fields"]["ttl_seconds"]
    assert ApprovalRequest.objects.count() == 1


def test_it_registers_a_token_cap_breach(engine_api, support):
    response = engine_api.post("/api/v1/approvals", json=token_cap_body(support))

    assert response.status_code == 201, response.text
    approval = response.json()
    assert approval["kind"] == "token_cap"
    assert (approval["tokens_used"], approval["token_cap"], approval["scope"]) == (1200, 1000, "turn")
    assert approval["rule_id"] is None and approval["boundary"] is None and approval["call_digest"] is None


def test_it_refuses_a_token_cap_report_below_the_cap(engine_api, support):
    response = engine_api.post("/api/v1/approvals", json=token_cap_body(support, tokens_used=10))

    assert response.status_code == 400
    assert "tokens_used" in error_of(response)["fields"]
    assert not ApprovalRequest.objects.exists()


# --- pass information level ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("level", "field", "value", "allowed"),
    [
        ("summary", "arguments", {"id": 1}, False),
        ("none", "arguments", {"id": 1}, False),
        ("none", "summary", "Delete it", False),
        ("summary", "summary", "Delete it", True),
        ("full", "arguments", {"id": 1}, True),
    ],
)
def test_it_stores_only_what_the_pass_information_level_allows(engine_api, acme, alice, level, field, value, allowed):
    config = make_support_config(acme, alice, pass_information_level=level)
    body = gate_body(config, summary=..., arguments=...)
    body[field] = value

    response = engine_api.post("/api/v1/approvals", json=body)

    if allowed:
        assert response.status_code == 201
        assert response.json()[field] == value
    else:
        assert response.status_code == 400
        message = error_of(response)["fields"][field]
        assert f"pass information level {level}" in message
        assert not ApprovalRequest.objects.exists()


# --- inert ------------------------------------------------------------------------------------


def test_it_stores_nothing_and_lets_the_call_proceed_on_the_free_plan(engine_api, acme, support):
    workspace_set_plan(workspace=acme, plan="free")

    gate = engine_api.post("/api/v1/approvals", json=gate_body(support))
    cap = engine_api.post("/api/v1/approvals", json=token_cap_body(support))

    assert (gate.status_code, gate.json()) == (200, INERT)
    assert (cap.status_code, cap.json()) == (200, INERT)
    assert not ApprovalRequest.objects.exists()


def test_it_is_inert_for_gates_when_no_rule_is_enabled_but_still_parks_a_token_cap(engine_api, acme, alice):
    config = make_config(acme, token_cap_per_turn=1000)
    rule = make_rule(config, enabled=False)
    publish(config, alice)

    gate = engine_api.post("/api/v1/approvals", json=gate_body(config, rule_id=rule.public_id))
    cap = engine_api.post("/api/v1/approvals", json=token_cap_body(config))

    assert (gate.status_code, gate.json()) == (200, INERT)
    assert cap.status_code == 201  # a token cap is not a rule: on Pro it parks the run
    assert ApprovalRequest.objects.get().kind == "token_cap"


# --- refusals ---------------------------------------------------------------------------------


def _post_raw(api: Api, data: bytes) -> requests.Response:
    return api.post("/api/v1/approvals", data=data, headers={"Content-Type": "application/json"})


def test_it_answers_400_for_bad_json_and_a_body_that_is_not_an_object(engine_api, support):
    bad = _post_raw(engine_api, b'{"kind": "gate",')
    listed = engine_api.post("/api/v1/approvals", json=[gate_body(support)])

    assert bad.status_code == 400 and error_of(bad)["code"] == "bad_json"
    assert listed.status_code == 400 and error_of(listed)["code"] == "invalid"
    assert not ApprovalRequest.objects.exists()


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("kind", "approval", 'kind "approval" is not one of: gate, token_cap'),
        ("kind", None, "may not be null"),
        ("config_version", "1", "config_version must be an integer"),
        ("config_version", True, "config_version must be an integer"),
        ("config_version", 0, "greater than or equal to 1"),
        ("caller", 42, "caller must be a string"),
        ("target", ["x"], "target must be a string"),
        ("run_id", "", "run_id must not be empty"),
        ("operation", ..., "operation is required"),
        ("caller", "x" * 501, "caller is at most 500 characters"),
        ("target", "x" * 501, "target is at most 500 characters"),
        ("operation", "x" * 501, "operation is at most 500 characters"),
        ("run_id", "x" * 501, "run_id is at most 500 characters"),
        ("thread_id", "x" * 501, "thread_id is at most 500 characters"),
        ("summary", "x" * 2001, "summary is at most 2,000 characters"),
        ("arguments", {"blob": "x" * (64 * 1024)}, "the limit is 64 KiB"),
    ],
)
def test_it_refuses_bad_input_with_400_naming_the_field_and_stores_nothing(engine_api, support, field, value, words):
    body = gate_body(support, **{field: value})

    response = engine_api.post("/api/v1/approvals", json=body)

    assert response.status_code == 400, response.text
    error = error_of(response)
    assert field in error["fields"], error
    assert words in error["fields"][field]
    assert not ApprovalRequest.objects.exists()


def test_it_accepts_arguments_of_exactly_64_kib(engine_api, support):
    padding = 64 * 1024 - len(json.dumps({"blob": ""}, separators=(",", ":")))
    response = engine_api.post("/api/v1/approvals", json=gate_body(support, arguments={"blob": "x" * padding}))

    assert response.status_code == 201


def test_it_answers_404_for_an_unknown_config_or_version_and_for_another_workspaces_config(
    engine_api, globex, charlie, support
):
    theirs = make_support_config(globex, charlie)

    unknown = engine_api.post("/api/v1/approvals", json=gate_body(support, config_id="cfg_doesnotexist00"))
    version = engine_api.post("/api/v1/approvals", json=gate_body(support, config_version=7))
    foreign = engine_api.post("/api/v1/approvals", json=gate_body(theirs))

    assert unknown.status_code == version.status_code == foreign.status_code == 404
    assert "has no version 7" in error_of(version)["message"]
    assert error_of(foreign)["message"] == f"No config {theirs.public_id} in this workspace."
    assert not ApprovalRequest.objects.exists()


def test_it_lets_only_engine_keys_register(anonymous_api, bob_api, alice_api, support):
    body = gate_body(support)

    assert anonymous_api.post("/api/v1/approvals", json=body).status_code == 401
    for person in (bob_api, alice_api):
        response = person.post("/api/v1/approvals", json=body)
        assert response.status_code == 403
        assert "engine key" in error_of(response)["message"]
    assert not ApprovalRequest.objects.exists()


# --- idempotency ------------------------------------------------------------------------------


def test_it_replays_the_first_request_for_the_same_key_and_body(engine_api, support):
    body = gate_body(support)
    headers = {"Idempotency-Key": "run_1/thr_1/call_7"}

    first = engine_api.post("/api/v1/approvals", json=body, headers=headers)
    # The same body with its keys in another order is the same body.
    again = engine_api.post("/api/v1/approvals", json=dict(reversed(body.items())), headers=headers)

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json() == first.json()
    assert ApprovalRequest.objects.count() == 1


def test_it_refuses_the_same_key_with_another_body_with_422(engine_api, support):
    headers = {"Idempotency-Key": "call-7"}
    first = engine_api.post("/api/v1/approvals", json=gate_body(support), headers=headers).json()

    response = engine_api.post("/api/v1/approvals", json=gate_body(support, target="customer T-9"), headers=headers)

    assert response.status_code == 422
    error = error_of(response)
    assert error["code"] == "idempotency_key_reused"
    assert first["id"] in error["message"]
    assert ApprovalRequest.objects.count() == 1


def test_it_scopes_idempotency_keys_to_the_engine_key(engine_api, make_api, acme, support):
    other_engine = make_api(make_token(acme, engine="batch-engine"))
    headers = {"Idempotency-Key": "call-7"}

    first = engine_api.post("/api/v1/approvals", json=gate_body(support), headers=headers)
    second = other_engine.post("/api/v1/approvals", json=gate_body(support), headers=headers)

    assert (first.status_code, second.status_code) == (201, 201)
    assert first.json()["id"] != second.json()["id"]


def test_it_refuses_an_idempotency_key_over_255_characters_or_empty(engine_api, support):
    long = engine_api.post("/api/v1/approvals", json=gate_body(support), headers={"Idempotency-Key": "k" * 256})
    empty = engine_api.post("/api/v1/approvals", json=gate_body(support), headers={"Idempotency-Key": ""})

    assert long.status_code == empty.status_code == 400
    assert "at most 255 characters" in error_of(long)["fields"]["Idempotency-Key"]
    assert "Idempotency-Key" in error_of(empty)["fields"]
    assert not ApprovalRequest.objects.exists()


def test_it_creates_exactly_one_request_when_50_identical_registrations_race(live_server, acme, support):
    token = make_token(acme, engine="racer")
    body = gate_body(support)
    barrier = threading.Barrier(50)
    answers: list[requests.Response] = []
    lock = threading.Lock()

    def register() -> None:
        api = Api(live_server.url, token)  # its own HTTP session and connection
        # Open the keep-alive connection first (retrying if the listen backlog overflows), so the
        # 50 registrations below leave together on 50 open connections: a real race.
        for attempt in range(5):
            try:
                api.get(f"/api/v1/configs/{support.public_id}/served")
                break
            except requests.ConnectionError:
                if attempt == 4:
                    raise
        barrier.wait()
        response = api.post("/api/v1/approvals", json=body, headers={"Idempotency-Key": "the-same-call"})
        with lock:
            answers.append(response)

    threads = [threading.Thread(target=register) for _ in range(50)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(answers) == 50
    assert sorted(r.status_code for r in answers) == [200] * 49 + [201], [
        r.text for r in answers if r.status_code > 201
    ]
    assert len({r.json()["id"] for r in answers}) == 1
    assert ApprovalRequest.objects.count() == 1


# --- query counts -----------------------------------------------------------------------------


def _registration_queries(api: Api, body: dict, key: str) -> int:
    with count_queries() as queries:
        response = api.post("/api/v1/approvals", json=body, headers={"Idempotency-Key": key})
    assert response.status_code == 201, response.text
    return len(queries)


@pytest.mark.django_db(transaction=True)  # no test transaction: no savepoint around the INSERT
def test_it_registers_with_the_same_few_queries_whatever_the_table_holds(make_api, acme, support):
    token = make_token(acme, engine="counted")
    api = make_api(token)  # in this process, so its SQL is counted: the edge makes the same registration_answer
    engine_key = ApiToken.objects.get(name="counted")
    bulk_requests(support, 5, engine_key=engine_key)
    _registration_queries(api, gate_body(support, run_id="warm-up"), "warm-up")  # connection set-up aside

    few = _registration_queries(api, gate_body(support, run_id="a"), "key-a")
    bulk_requests(support, 500, engine_key=engine_key)
    many = _registration_queries(api, gate_body(support, run_id="b"), "key-b")

    assert few == many
    # The token and the INSERT: the frozen version is cached after the warm-up, and the
    # idempotency key is looked up only when its unique constraint refuses a row.
    assert many == 2


def test_it_never_answers_500_to_odd_but_valid_json(engine_api, support):
    odd_bodies = [b"null", b"42", b'"gate"', b"{}", b'{"kind": {"a": 1}}', b'{"kind": "gate", "config_id": null}']
    for data in odd_bodies:
        response = _post_raw(engine_api, data)
        assert response.status_code == 400, (data, response.text)
        error_of(response)


@pytest.mark.parametrize("depth", [65, 995, 100_000])
def test_it_answers_400_not_500_to_json_nested_too_deep(engine_api, support, depth):
    data = b'{"kind": "gate", "arguments": ' + b"[" * depth + b"]" * depth + b"}"

    response = _post_raw(engine_api, data)

    assert response.status_code == 400
    assert error_of(response)["code"] == "bad_json"
    assert "nested more than 64 levels deep" in error_of(response)["message"]


def test_it_accepts_arguments_nested_within_the_limit(engine_api, support):
    nested = 0
    for _ in range(62):  # the body object, then `arguments` 63 levels deep in all
        nested = [nested]

    response = engine_api.post("/api/v1/approvals", json=gate_body(support, arguments=nested))

    assert response.status_code == 201, response.text


@pytest.mark.parametrize(
    ("raw_arguments", "words"),
    [
        (b"1e400", "finite numbers"),
        (b'{"n": [1, -1e999]}', "finite numbers"),
        (b'"\\ud800"', "lone surrogate"),
        (b'{"a\\u0000b": 1}', "NUL"),
        (b'["ok", "nul \\u0000 inside"]', "NUL"),
    ],
)
def test_it_refuses_arguments_the_database_could_not_store(engine_api, support, raw_arguments, words):
    body = json.dumps(gate_body(support, arguments="PLACEHOLDER")).encode()
    data = body.replace(b'"PLACEHOLDER"', raw_arguments)

    response = _post_raw(engine_api, data)

    assert response.status_code == 400, response.text
    assert words in error_of(response)["fields"]["arguments"]
    assert not ApprovalRequest.objects.exists()


def test_it_refuses_a_lone_surrogate_even_in_a_field_it_does_not_know(engine_api, support):
    # The body is not Unicode text: the parser refuses it, naming where, before any field is read.
    body = json.dumps({**gate_body(support), "extra": "PLACEHOLDER"}).encode().replace(b'"PLACEHOLDER"', b'"\\udfff"')

    response = _post_raw(engine_api, body)
    replay = engine_api.post(
        "/api/v1/approvals", data=body, headers={"Content-Type": "application/json", "Idempotency-Key": "k"}
    )

    assert response.status_code == 400
    assert "lone surrogate" in error_of(response)["fields"]["extra"]
    assert replay.status_code == 400
    assert not ApprovalRequest.objects.exists()


def test_a_revoked_engine_key_can_no_longer_register_nor_poll(make_api, acme, support):
    raw = make_token(acme, engine="retired")
    api = make_api(raw)
    approval = api.post("/api/v1/approvals", json=gate_body(support)).json()

    token_revoke(token=ApiToken.objects.get(name="retired"))

    assert api.post("/api/v1/approvals", json=gate_body(support, run_id="r2")).status_code == 401
    assert api.get(f"/api/v1/approvals/{approval['id']}").status_code == 401
    assert ApprovalRequest.objects.count() == 1
