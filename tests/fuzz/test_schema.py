"""Schema fuzzing: schemathesis drives every operation of the served /api/schema/ as an engine, a reviewer and
an admin, with generated bodies, queries and ids (and, for each, the workspace's real ids), and holds every
answer to all of schemathesis' checks (`--checks all`): no 5xx; status code, content type, headers and body
as the schema says; invalid input refused, valid input accepted, unsupported methods 405, auth enforced. One
exception, narrow and explained at POSITIVE_DATA_REFUSED."""

import json
from typing import NamedTuple

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.checks import CHECKS, load_all_checks
from schemathesis.config import SchemathesisConfig
from schemathesis.config._checks import NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES
from schemathesis.core.parameters import ParameterLocation
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import positive_data_acceptance

from tests.factories import make_approval
from tests.helpers import make_config, make_member, make_rule, make_token, make_workspace, publish

load_all_checks()  # registers the OpenAPI ones: what the CLI's `--checks all` runs
ALL_CHECKS = CHECKS.get_all()
assert len(ALL_CHECKS) >= 14, [check.__name__ for check in ALL_CHECKS]


class Refusal(NamedTuple):
    fields: frozenset[str]
    why: str


# positive_data_acceptance says a request the schema allows must not earn a 400. These operations refuse
# some schema-valid input on purpose, for reasons a JSON schema cannot state: stored state, or two fields
# together. Only such a 400, naming only these fields, is let through; any other refusal of valid input
# (a 400 naming another field, a 413, a 422) still fails the check, here and on every other operation.
POSITIVE_DATA_REFUSED: dict[str, Refusal] = {
    "approvals_register": Refusal(
        frozenset(
            {
                "tokens_used",
                "rule_id",
                "arguments",
                "summary",
                "scope",
                "requested_by",
                "arguments_schema",
                "questions",
                "title",
            }
        ),
        "tokens_used must reach token_cap; rule_id must be an enabled gate of the served version; arguments and "
        "summary only at the version's pass level; scope turn not under a stop cap; requested_by an address "
        "Django's email check takes (stricter than the schema's string); a question's ids unique, its options "
        "2–20 and distinct, its recommended an option's index, its min ≤ max, choice-only fields on a choice "
        "(questions.<n>.…); a title not blank; arguments_schema must be a JSON Schema (draft 2020-12), which no "
        "schema of a schema in OpenAPI 3.0 states",
    ),
    "approvals_decide": Refusal(
        frozenset({"decision", "grant", "grant_ttl_seconds", "answers", "reason", "arguments", "propose_condition"}),
        "which decision fits depends on the stored request (approve/reject a gate, proceed/stop a token cap, "
        "answer/decline a question — each answer checked against its question, answers.<id> — approve/revise a "
        "plan, revise with a reason), "
        "and `grant: run` on whether its rule allows run grants; grant_ttl_seconds goes with `grant: run` "
        "(OpenAPI 3.0 has no dependentRequired); `arguments` on whether its rule allows edits and on the "
        "request's own arguments_schema (a failing path inside them is named: arguments.amount_cents); "
        "`propose_condition` (approve always) must compile and be false for this very call",
    ),
    "grants_open_window": Refusal(
        frozenset({"rule_id", "expires_at", "reason"}),
        "rule_id must name a rule of this workspace; expires_at must be in the future and at most 7 days away; "
        "the reason may not be blank",
    ),
    "audit_retrieve": Refusal(frozenset({"until"}), "until must be later than since"),
    "configs_contacts_create": Refusal(
        frozenset({"channel_ref", "secret_ref"}),
        "what channel_ref and secret_ref must hold depends on channel: an email, Slack or webhook contact needs "
        "a ${HITL_…} reference, a webhook a secret_ref too",
    ),
    "configs_rules_create": Refusal(
        frozenset(
            {
                "match",
                "notify",
                "escalate_to",
                "escalate_after_seconds",
                "allow_run_grant",
                "allow_edit",
                "condition",
                "approver_groups",
            }
        ),
        "match must be the kind's selector (a delete rule needs one, an mcp_server match never names a tool); "
        "notify and escalate_to must name contacts of this config; escalate_to needs escalate_after_seconds; "
        "approvals_required > 1 rules out allow_run_grant and allow_edit; allow_edit needs the config's level full; "
        "require_passkey rules out allow_run_grant; condition must compile as CEL over the contract's variables; "
        "approver_groups must name groups of this workspace",
    ),
    "configs_partial_update": Refusal(
        frozenset({"pass_information_level"}),
        "a level below full is refused while a draft rule allows edits (allow_edit needs the exact arguments)",
    ),
    "me_delegation_set": Refusal(
        frozenset({"delegate", "until"}),
        "delegate must be another member of this workspace; until must be in the future and at most 30 days away",
    ),
    "groups_member_add": Refusal(frozenset({"email"}), "email must be a member of this workspace"),
    "approval_comments_add": Refusal(frozenset({"text"}), "a comment is not white space alone"),
    "approval_snooze": Refusal(frozenset({"until"}), "until must be in the future and at most 7 days away"),
    "push_subscribe": Refusal(
        frozenset({"endpoint", "keys", "keys.p256dh", "keys.auth"}),
        "endpoint must be a push service's https URL, keys.p256dh a point on P-256 and keys.auth 16 bytes: "
        "what a browser's PushManager makes, not any string",
    ),
}
# A PATCH is judged together with the stored object's other fields: the same refusals.
POSITIVE_DATA_REFUSED["configs_contacts_partial_update"] = POSITIVE_DATA_REFUSED["configs_contacts_create"]
POSITIVE_DATA_REFUSED["configs_rules_partial_update"] = POSITIVE_DATA_REFUSED["configs_rules_create"]
# The config's operationId as drf-spectacular names it: questions_notify must name contacts of this config.
POSITIVE_DATA_REFUSED["configs_partial_update"] = Refusal(
    POSITIVE_DATA_REFUSED["configs_partial_update"].fields | {"questions_notify"},
    POSITIVE_DATA_REFUSED["configs_partial_update"].why + "; questions_notify must name contacts of this config",
)


def positive_data_acceptance_but_for_stated_refusals(ctx, response, case) -> bool | None:
    """positive_data_acceptance, letting through only the refusals POSITIVE_DATA_REFUSED states, NUL's and a cursor's.

    A NUL character is refused in any text the API takes (PostgreSQL cannot store it; docs/api.md;
    tests/test_never_5xx.py). The schema states it with a pattern on every string a caller sends
    (common/schema.py); what no pattern reaches — a key, or a string inside free-form JSON such
    as `arguments` — is let through here. A `cursor` matching its pattern may still be one the server
    never wrote: a 400 its description states. A 400 passes only if each field it names is one of
    these cases (a body may earn several at once).
    """
    try:
        return positive_data_acceptance(ctx, response, case)
    except RejectedPositiveData:
        error = response.json()["error"] if response.status_code == 400 else {}
        fields = error.get("fields", {})
        refusal = POSITIVE_DATA_REFUSED.get(case.operation.definition.raw.get("operationId"))
        stated = (refusal.fields if refusal is not None else frozenset()) | {"cursor"}
        nul = bool(error) and _holds_nul(response.request)
        blank = _blank_strings(response.request)
        if fields and all(
            name in stated
            or name.split(".", 1)[0] in stated  # a path inside a stated field (questions.0.options, answers.env)
            or (nul and _about_nul(message))
            or (name in blank and message == BLANK)
            for name, message in fields.items()
        ):
            return None
        if not fields and nul and _about_nul(error["message"]):
            return None
        raise


def _holds_nul(request) -> bool:
    body = request.body or b""
    body = body if isinstance(body, bytes) else body.encode()
    return any(nul in body for nul in (b"\x00", b"%00", b"\\u0000")) or "%00" in request.url


# Names and notes are trimmed of whitespace as Python counts it (docs/api.md, Limits), which includes
# U+001C–U+001F; the schema's minLength cannot say that a string of only those is blank.
BLANK = "This field may not be blank."


def _blank_strings(request) -> set[str]:
    """The body's top-level fields whose value is a non-empty string of nothing but whitespace."""
    try:
        body = json.loads(request.body or b"")
    except ValueError:
        return set()
    if not isinstance(body, dict):
        return set()
    return {name for name, value in body.items() if isinstance(value, str) and value and not value.strip()}


def _about_nul(message: str) -> bool:
    return "NUL" in message or "Null characters" in message


CHECKS_RUN = [
    positive_data_acceptance_but_for_stated_refusals if check is positive_data_acceptance else check
    for check in ALL_CHECKS
]


@pytest.fixture
def world(live_server) -> dict:
    """acme (Pro): a published config with a rule and a contact, pending and decided requests, three roles."""
    from approvals.review.decide import approval_decide
    from contacts.services import contact_create

    acme = make_workspace("acme", plan="pro")
    alice = make_member(acme, "alice@acme.test", "admin")
    bob = make_member(acme, "bob@acme.test", "reviewer")
    config = make_config(acme, pass_information_level="full")
    rule = make_rule(config, message="Check before deleting")
    contact = contact_create(config=config, name="On call", channel="email", channel_ref="${HITL_ACME_ONCALL_EMAIL}")
    version = publish(config, user=alice, note="first")
    engine_token = make_token(acme, engine="support-engine")
    from workspaces.models import ApiToken

    engine_key = ApiToken.objects.get(workspace=acme, kind="engine")
    approvals = []
    for n in range(3):
        approval = make_approval(
            config,
            engine_key=engine_key,
            version=version.number,
            rule_id=rule.public_id,
            run_id=f"run_{n}",
            caller="support-agent",
            target=f"crm/customers/{n}",
            operation="delete_record",
            level="full",
            created_at=version.published_at,
            ttl=__import__("datetime").timedelta(days=1),
        )
        approvals.append(approval)
    approval_decide(approval=approvals[1], user=bob, decision="approve")
    return {
        "tokens": {
            "engine": engine_token,
            "reviewer": make_token(acme, user=bob),
            "admin": make_token(acme, user=alice),
        },
        # Path parameters by name → a real id in this workspace, so the fuzzer reaches past the 404.
        "ids": {
            "cfg": config.public_id,
            "rul": rule.public_id,
            "con": contact.public_id,
            "apr": approvals[0].public_id,
            "public_id": approvals[2].public_id,
            "number": version.number,
        },
    }


def _one_second_if_valid(wait):
    """A valid wait over a second (a number or, from the coverage phase, a string) as one second of the same
    type; anything else — an invalid wait the case is about, 0, 1 — as it was."""
    try:
        seconds = float(wait)
    except (TypeError, ValueError):
        return wait
    if isinstance(wait, bool) or not 1 < seconds <= 30:
        return wait
    return "1" if isinstance(wait, str) else 1


def generated_schema() -> dict:
    """The schema exactly as /api/schema/ serves it (test_it_fuzzes_the_schema_the_server_serves checks that).

    Built in-process at collection so that each operation becomes a test of its own.
    """
    from drf_spectacular.generators import SchemaGenerator

    return json.loads(json.dumps(SchemaGenerator().get_schema(request=None, public=True), default=str))


# A body the client sends chunked — requests does so for an empty one, such as a form whose only field is an
# empty dict — reaches Django's test server, which cannot read chunks; the portal then refuses it with 411
# rather than read it as empty (common/middleware.py, docs/api.md, Limits; the production server reads
# chunks). For negative data that is a rejection like any other, so 411 joins schemathesis' list.
REJECTIONS = [*NEGATIVE_DATA_REJECTION_EXPECTED_STATUSES, "411"]
schema = schemathesis.openapi.from_dict(
    generated_schema(),
    config=SchemathesisConfig.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": REJECTIONS}}}),
)


def test_it_fuzzes_the_schema_the_server_serves(live_server):
    served = requests.get(f"{live_server.url}/api/schema/", params={"format": "json"}, timeout=30)
    assert served.status_code == 200
    assert served.json() == schema.raw_schema


@schema.parametrize()
@settings(
    max_examples=5,
    deadline=None,
    # No shrinking: a failure is reported as found (with its curl line), which keeps the run to minutes.
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much],
)
def test_it_answers_every_operation_as_its_schema_says(case, world, live_server):
    generated = dict(case.path_parameters or {})
    real = {name: world["ids"].get(name, value) for name, value in generated.items()}
    # Real ids reach the operation itself, as each role; generated ids (mostly unknown ones) once, as the admin.
    # A case whose path is the invalid part keeps its generated ids: a real id would make it valid, and
    # negative_data_rejection would then (rightly) see a 200 to a request it believes is invalid.
    if case.meta is not None and case.meta.is_negative_at(ParameterLocation.PATH):
        calls = [(generated, "admin")]
    else:
        calls = [(real, role) for role in world["tokens"]]
        if real != generated:
            calls.append((generated, "admin"))
    # A valid `wait` long-polls a real pending request for up to 30 s per call (and per role): one second
    # tells the fuzzer as much about the answer's shape; the waiting itself has tests of its own.
    if case.query and "wait" in case.query:
        case.query["wait"] = _one_second_if_valid(case.query["wait"])
    for path_parameters, role in calls:
        case.path_parameters = path_parameters
        # Passed to validate_response too: ignored_auth then knows the token is ours and probes without it.
        headers = {"Authorization": f"Bearer {world['tokens'][role]}"}
        response = case.call(base_url=live_server.url, headers=headers, timeout=40)
        try:
            case.validate_response(response, checks=CHECKS_RUN, headers=headers)
        except Exception as failure:
            failure.add_note(f"as {role}, path parameters {path_parameters}")
            raise
