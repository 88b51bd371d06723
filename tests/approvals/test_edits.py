"""Approve with edits over real HTTP (API.md, "Approve with edits"): the rule's allow_edit, the registration's
arguments_schema, a reviewer's edited arguments, the digests, the outcome's reported digest, grants, audit."""

import json

import pytest
from django.urls import reverse

from approvals.engine.digest import call_digest
from approvals.models import ApprovalRequest
from audit.models import AuditRecord
from tests.helpers import error_of, make_config, make_rule, publish

from .engine_support import gate_body

pytestmark = pytest.mark.live_http

REFUND = {"customer_id": "T-4821", "amount_cents": 50_000, "currency": "EUR"}
REFUND_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "customer_id": {"type": "string"},
        "amount_cents": {"type": "integer", "minimum": 1, "maximum": 100_000},
        "currency": {"enum": ["EUR", "USD"]},
    },
    "required": ["customer_id", "amount_cents"],
    "additionalProperties": False,
}


def edit_config(workspace, user=None, **rule):
    """Published v1: rule 0 refunds on mcp_billing with edits allowed, rule 1 deletes without, rule 2 with grants."""
    config = make_config(workspace, "Billing agent", pass_information_level="full")
    make_rule(config, kind="mcp_server", match="mcp_billing", allow_edit=True, **rule)
    make_rule(config, order=20)
    make_rule(config, kind="worker", match="*", allow_edit=True, allow_run_grant=True, order=30)
    publish(config, user)
    return config


def register(engine_api, config, rule=0, **overrides) -> dict:
    overrides.setdefault("arguments", REFUND)
    overrides.setdefault("arguments_schema", REFUND_SCHEMA)
    overrides.setdefault("target", "mcp_billing")
    overrides.setdefault("operation", "refund")
    body = gate_body(config, rule=rule, **overrides)
    response = engine_api.post("/api/v1/approvals", body)
    assert response.status_code == 201, response.text
    return response.json()


def decide(api, approval: dict, decision: str = "approve", **extra):
    return api.post(f"/api/v1/approvals/{approval['id']}/decision", {"decision": decision, **extra})


def digest(arguments) -> str:
    return call_digest(target="mcp_billing", operation="refund", arguments=arguments)


# The rule -----------------------------------------------------------------------------------------


def test_a_rule_allows_edits_through_the_rules_api_and_the_version_freezes_it(alice_api, acme, alice):
    config = make_config(acme, pass_information_level="full")
    created = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", {"allow_edit": True})
    assert created.status_code == 201, created.text
    assert created.json()["allow_edit"] is True
    plain = alice_api.post(f"/api/v1/configs/{config.public_id}/rules", {})
    assert plain.json()["allow_edit"] is False
    version = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", {}).json()
    assert [rule["allow_edit"] for rule in version["rules"]] == [True, False]


def test_allow_edit_needs_one_approval_and_level_full(alice_api, acme):
    config = make_config(acme, pass_information_level="full")
    rules = f"/api/v1/configs/{config.public_id}/rules"
    quorum = alice_api.post(rules, {"allow_edit": True, "approvals_required": 2})
    assert quorum.status_code == 400
    assert "allow_edit" in error_of(quorum)["fields"]

    summary = make_config(acme, "Summary agent", pass_information_level="summary")
    refused = alice_api.post(f"/api/v1/configs/{summary.public_id}/rules", {"allow_edit": True})
    assert refused.status_code == 400
    assert "full" in error_of(refused)["fields"]["allow_edit"]

    rule = alice_api.post(rules, {"allow_edit": True}).json()
    lowered = alice_api.patch(f"/api/v1/configs/{config.public_id}", {"pass_information_level": "summary"})
    assert lowered.status_code == 400
    assert rule["id"] in error_of(lowered)["fields"]["pass_information_level"]
    quorum_later = alice_api.patch(f"{rules}/{rule['id']}", {"approvals_required": 3})
    assert quorum_later.status_code == 400
    assert "allow_edit" in error_of(quorum_later)["fields"]


# The schema, at registration --------------------------------------------------------------------


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "integer-ish"},  # not a type
        {"properties": {"amount_cents": {"minimum": "one"}}},  # a keyword of the wrong type
        "an object, please",
        {"description": "x" * (17 * 1024)},  # over 16 KiB
        {"$ref": "https://schemas.example.com/refund.json"},  # the portal fetches nothing
        {"properties": {"amount_cents": {"$ref": "#/$defs/missing"}}},  # a reference to nowhere
        {"$defs": {"loop": {"$ref": "#/$defs/loop"}}, "$ref": "#/$defs/loop"},  # loops on the proposal itself
    ],
)
def test_a_registration_whose_arguments_schema_is_not_a_json_schema_is_refused(engine_api, acme, alice, schema):
    config = edit_config(acme, alice)
    body = gate_body(config, target="mcp_billing", operation="refund", arguments=REFUND, arguments_schema=schema)
    response = engine_api.post("/api/v1/approvals", body)
    assert response.status_code == 400, response.text
    assert "arguments_schema" in error_of(response)["fields"]
    assert not ApprovalRequest.objects.exists()


# Approving -----------------------------------------------------------------------------------------


def test_approving_with_edits_records_what_was_approved_and_keeps_the_proposal(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    approval = register(engine_api, config)
    edited = {**REFUND, "amount_cents": 20_000}

    answer = decide(bob_api, approval, arguments=edited, reason="Half of it, as agreed.")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["status"] == "approved"
    assert (body["arguments"], body["call_digest"]) == (REFUND, digest(REFUND))  # the proposal, as proposed
    decision = body["decision"]
    assert decision["arguments"] == edited
    assert decision["call_digest"] == digest(edited) != body["call_digest"]
    assert decision["edited"] is True

    polled = engine_api.get(f"/api/v1/approvals/{approval['id']}?wait=1").json()  # the engine's long-poll (edge)
    assert polled["decision"] == decision
    listed = bob_api.get("/api/v1/approvals?status=approved").json()["results"][0]
    assert listed["decision"] == decision


def test_approving_as_proposed_gives_the_proposal_back_unedited(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    plain = decide(bob_api, register(engine_api, config)).json()["decision"]
    assert (plain["arguments"], plain["call_digest"], plain["edited"]) == (REFUND, digest(REFUND), False)
    # The same arguments sent back (keys in another order) are no edit either.
    same = {key: REFUND[key] for key in reversed(REFUND)}
    resent = decide(bob_api, register(engine_api, config, run_id="run_2"), arguments=same).json()["decision"]
    assert (resent["call_digest"], resent["edited"]) == (digest(REFUND), False)


def test_a_rejection_carries_the_proposal_and_no_edit(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    rejected = decide(bob_api, register(engine_api, config), "reject", reason="No refunds today.").json()
    assert (rejected["decision"]["edited"], rejected["decision"]["call_digest"]) == (False, digest(REFUND))


def test_edits_are_refused_where_the_rule_does_not_allow_them(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    approval = register(engine_api, config, rule=1, arguments_schema=...)
    refused = decide(bob_api, approval, arguments={**REFUND, "amount_cents": 1})
    assert refused.status_code == 400
    error = error_of(refused)
    assert "arguments" in error["fields"] and "allow_edit" in error["message"]
    assert ApprovalRequest.objects.get(public_id=approval["id"]).status == "pending"

    editable = register(engine_api, config, run_id="run_2")
    with_reject = decide(bob_api, editable, "reject", arguments=REFUND)
    assert with_reject.status_code == 400
    assert "arguments" in error_of(with_reject)["fields"]


def test_edited_arguments_that_fail_the_schema_are_refused_naming_the_path(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    approval = register(engine_api, config)

    too_much = decide(bob_api, approval, arguments={**REFUND, "amount_cents": 500_000})
    assert too_much.status_code == 400
    error = error_of(too_much)
    assert list(error["fields"]) == ["arguments.amount_cents"]
    assert error["message"].startswith("arguments.amount_cents: ")
    assert "100000" in error["message"]

    several = decide(bob_api, approval, arguments={"customer_id": 7, "currency": "GBP"}).json()["error"]
    assert set(several["fields"]) == {"arguments.amount_cents", "arguments.currency", "arguments.customer_id"}
    assert "required" in several["fields"]["arguments.amount_cents"]

    assert decide(bob_api, approval, arguments="not an object").status_code == 400
    assert ApprovalRequest.objects.get(public_id=approval["id"]).status == "pending"
    fixed = decide(bob_api, approval, arguments={**REFUND, "amount_cents": 99_999})
    assert fixed.status_code == 200
    assert fixed.json()["decision"]["arguments"]["amount_cents"] == 99_999


def test_an_edit_that_walks_into_a_loop_of_the_schema_is_refused_not_a_server_error(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    looping = {"type": "object", "properties": {"note": {"$ref": "#/properties/note"}}}
    approval = register(engine_api, config, arguments={"amount_cents": 1}, arguments_schema=looping)
    refused = decide(bob_api, approval, arguments={"amount_cents": 1, "note": "x"})
    assert refused.status_code == 400
    assert "itself without end" in error_of(refused)["fields"]["arguments"]


def test_without_a_schema_any_storable_json_may_be_approved(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    approval = register(engine_api, config, arguments_schema=...)
    answer = decide(bob_api, approval, arguments=["anything", {"goes": None}]).json()
    assert answer["decision"]["arguments"] == ["anything", {"goes": None}]
    nul = decide(bob_api, register(engine_api, config, run_id="run_2", arguments_schema=...), arguments="a\u0000b")
    assert nul.status_code == 400 and "arguments" in error_of(nul)["fields"]


# The outcome -------------------------------------------------------------------------------------


def test_an_outcome_with_the_approved_digest_matches(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    approval = register(engine_api, config)
    decision = decide(bob_api, approval, arguments={**REFUND, "amount_cents": 10}).json()["decision"]
    reported = engine_api.post(
        f"/api/v1/approvals/{approval['id']}/outcome", {"status": "executed", "call_digest": decision["call_digest"]}
    )
    assert reported.status_code == 200, reported.text
    execution = reported.json()["execution"]
    assert (execution["call_digest"], execution["digest_matches"]) == (decision["call_digest"], True)


def test_an_outcome_that_ran_the_proposal_instead_is_recorded_and_warned_about(
    engine_api, bob_api, acme, alice, bob, client
):
    config = edit_config(acme, alice)
    approval = register(engine_api, config)
    decide(bob_api, approval, arguments={**REFUND, "amount_cents": 10})
    outcome = f"/api/v1/approvals/{approval['id']}/outcome"
    reported = engine_api.post(outcome, {"status": "executed", "call_digest": approval["call_digest"]})
    assert reported.status_code == 200
    assert reported.json()["execution"] == {
        **reported.json()["execution"],
        "call_digest": approval["call_digest"],
        "digest_matches": False,
    }
    assert engine_api.get(f"/api/v1/approvals/{approval['id']}").json()["execution"]["digest_matches"] is False

    client.force_login(bob)
    page = client.get(reverse("approvals:detail", args=[approval["id"]])).content.decode()
    assert 'id="digest-warning"' in page and "not the approved one" in page
    assert "Approved with edits — proposed → approved" in page
    history = client.get(reverse("approvals:history")).content.decode()
    assert "digest-mismatch" in history and "Approved with edits" in history

    bad = engine_api.post(outcome, {"status": "executed", "call_digest": "abc"})
    assert bad.status_code == 400 and "call_digest" in error_of(bad)["fields"]


def test_an_outcome_without_a_digest_says_nothing_about_it(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    approval = register(engine_api, config)
    decide(bob_api, approval)
    execution = engine_api.post(f"/api/v1/approvals/{approval['id']}/outcome", {"status": "executed"}).json()
    assert (execution["execution"]["call_digest"], execution["execution"]["digest_matches"]) == (None, None)


# Grants and the audit log ----------------------------------------------------------------------------


def test_a_run_grant_approves_later_calls_as_proposed(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    first = register(engine_api, config, rule=2, target="worker", run_id="run_g")
    granted = decide(bob_api, first, grant="run", arguments={**REFUND, "amount_cents": 1}).json()
    assert granted["decision"]["edited"] is True and granted["decision"]["grant_id"]

    later_arguments = {**REFUND, "amount_cents": 70_000}
    later = register(engine_api, config, rule=2, target="worker", run_id="run_g", arguments=later_arguments)
    assert later["status"] == "approved"
    assert later["decision"]["grant_id"] == granted["decision"]["grant_id"]
    assert later["decision"]["arguments"] == later_arguments
    assert later["decision"]["call_digest"] == later["call_digest"]
    assert later["decision"]["edited"] is False


def test_every_step_is_audited_with_both_digests(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    approval = register(engine_api, config)
    edited = {**REFUND, "amount_cents": 10}
    decide(bob_api, approval, arguments=edited)
    engine_api.post(
        f"/api/v1/approvals/{approval['id']}/outcome", {"status": "executed", "call_digest": digest(edited)}
    )

    rows = {row.action: row.data for row in AuditRecord.objects.filter(object=approval["id"])}
    assert rows["approval.registered"]["call_digest"] == digest(REFUND)
    assert rows["approval.decided"] | {} == {
        **rows["approval.decided"],
        "call_digest": digest(REFUND),
        "approved_digest": digest(edited),
        "edited": True,
    }
    assert rows["approval.outcome"] | {} == {
        **rows["approval.outcome"],
        "approved_digest": digest(edited),
        "call_digest": digest(edited),
        "digest_matches": True,
    }


def test_another_workspaces_request_cannot_be_edited(engine_api, charlie_api, acme, alice):
    config = edit_config(acme, alice)
    approval = register(engine_api, config)
    assert decide(charlie_api, approval, arguments=REFUND).status_code == 404


# The CLI ---------------------------------------------------------------------------------------------


def test_the_cli_approves_with_edits_and_names_a_failing_path(engine_api, acme, alice, bob):
    from io import StringIO

    from django.core.management import call_command
    from django.core.management.base import CommandError

    config = edit_config(acme, alice)
    approval = register(engine_api, config)
    with pytest.raises(CommandError, match=r"arguments\.amount_cents: 0 is less than the minimum of 1"):
        call_command(
            "hitl",
            "approve",
            approval["id"],
            "--as",
            "bob@acme.test",
            "--arguments",
            '{"customer_id": "T-4821", "amount_cents": 0}',
        )
    out = StringIO()
    edited = {"customer_id": "T-4821", "amount_cents": 5}
    call_command(
        "hitl", "approve", approval["id"], "--as", "bob@acme.test", "--arguments", json.dumps(edited), stdout=out
    )
    assert f"the engine runs call digest {digest(edited)}" in out.getvalue()
    assert ApprovalRequest.objects.get(public_id=approval["id"]).approved_arguments == edited


# The OpenAPI schema ----------------------------------------------------------------------------------


def test_the_schema_describes_edits_and_real_answers_match_it(anonymous_api, engine_api, bob_api, acme, alice):
    from tests.schema import Schema

    schema = Schema.served(anonymous_api)
    components = schema.document["components"]["schemas"]
    assert {"arguments", "call_digest", "edited"} <= set(components["Decision"]["properties"])
    assert {"call_digest", "digest_matches"} <= set(components["Execution"]["properties"])
    assert {"allow_edit", "arguments_schema"} <= set(components["ApprovalRequest"]["properties"])
    assert "arguments_schema" in components["GateRegistrationRequest"]["properties"]
    assert "arguments" in components["DecisionInputRequest"]["properties"]
    assert "call_digest" in components["OutcomeRequest"]["properties"]
    assert "allow_edit" in components["Rule"]["properties"]

    config = edit_config(acme, alice)
    body = gate_body(config, target="mcp_billing", operation="refund", arguments=REFUND, arguments_schema=REFUND_SCHEMA)
    schema.check_request("post", "/api/v1/approvals", body)
    created = engine_api.post("/api/v1/approvals", body)
    schema.check_response("post", "/api/v1/approvals", created)
    edit = {"decision": "approve", "arguments": {**REFUND, "amount_cents": 7}}
    schema.check_request("post", "/api/v1/approvals/{apr}/decision", edit)
    decided = bob_api.post(f"/api/v1/approvals/{created.json()['id']}/decision", edit)
    schema.check_response("post", "/api/v1/approvals/{apr}/decision", decided)
    refused = bob_api.post(f"/api/v1/approvals/{created.json()['id']}/decision", {**edit, "arguments": {}})
    schema.check_response("post", "/api/v1/approvals/{apr}/decision", refused)
    outcome = {"status": "executed", "call_digest": created.json()["call_digest"]}
    schema.check_request("post", "/api/v1/approvals/{apr}/outcome", outcome)
    reported = engine_api.post(f"/api/v1/approvals/{created.json()['id']}/outcome", outcome)
    schema.check_response("post", "/api/v1/approvals/{apr}/outcome", reported)


def test_a_backtracking_pattern_runs_in_linear_time_and_lookaround_is_refused(engine_api, bob_api, acme, alice):
    config = edit_config(acme, alice)
    catastrophic = {"type": "object", "properties": {"note": {"type": "string", "pattern": "^(a+)+$"}}}
    approval = register(engine_api, config, arguments={"note": "a" * 60_000 + "!"}, arguments_schema=catastrophic)
    refused = decide(bob_api, approval, arguments={"note": "a" * 60_000 + "?"})  # Python's re would take ages
    assert refused.status_code == 400 and "arguments.note" in error_of(refused)["fields"]
    assert decide(bob_api, approval, arguments={"note": "aaa"}).json()["decision"]["edited"] is True

    lookahead = {"properties": {"note": {"pattern": "^(?=a)a$"}}}
    body = gate_body(config, target="mcp_billing", operation="refund", arguments=REFUND, arguments_schema=lookahead)
    response = engine_api.post("/api/v1/approvals", body)
    assert response.status_code == 400 and "RE2" in error_of(response)["fields"]["arguments_schema"]
    keyed = {"patternProperties": {"^(?!x)": {"type": "string"}}}
    body["arguments_schema"] = keyed
    assert engine_api.post("/api/v1/approvals", body).status_code == 400
