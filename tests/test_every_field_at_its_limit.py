"""Every operation of the served schema, every string field at its limit and one past it, and a lone surrogate
(`"\\ud800"`) in every field: the answer is 2xx or a 400 (a 404 where the changed part is the path's id) —
never a 5xx (docs/api.md, Limits).

Each operation starts from a body it accepts (BASELINES), so a changed field reaches as far into the server as
a real value would: the database column, the audit record, the answer's encoding. A new operation with a body
fails here until it has a baseline."""

import copy
import json
from collections.abc import Callable, Iterator
from datetime import timedelta
from urllib.parse import quote

import pytest
import requests
from django.utils import timezone

from approvals.review.decide import approval_decide
from common.ids import new_public_id
from contacts.services import contact_create
from people.models import ApproverGroup
from tests.approvals.engine_support import gate_body, make_support_config, token_cap_body
from tests.approvals.question_support import plan_body, question_body
from tests.factories import make_approval
from tests.helpers import make_token
from workspaces.models import ApiToken

SURROGATE = "\ud800"
# A string the schema sets no maxLength on: long enough to pass any column a field might reach unchecked.
UNBOUNDED_BODY = 20_000
UNBOUNDED_PARAMETER = 500  # a path or query value (a URL stays within what the server reads)
NOT_SENT_HERE = {
    # Slack and Telegram sign or authenticate their own form and JSON bodies; their tests send those.
    "slack_interactions",
    "slack_events",
    "telegram_webhook",
}


@pytest.fixture
def world(live_server, acme, alice, bob) -> dict:
    config = make_support_config(acme, alice)
    contact = contact_create(config=config, name="On call", channel="email", channel_ref="${HITL_ACME_ONCALL_EMAIL}")
    engine_token = make_token(acme, engine="support-engine")
    engine_key = ApiToken.objects.get(workspace=acme, kind="engine")
    rule_id = config.versions.get(number=1).rules[0]["id"]

    def pending(**fields):
        return make_approval(
            config, engine_key=engine_key, rule_id=rule_id, level="full", arguments={"id": 1}, **fields
        )

    def approved():
        approval = pending()
        approval_decide(approval=approval, user=bob, decision="approve")
        return approval

    return {
        "url": live_server.url,
        "config": config,
        "contact": contact,
        "rule": config.rules.first(),
        "pending": pending,
        "approved": approved,
        "tokens": {"engine": engine_token, "admin": make_token(acme, user=alice)},
    }


# A browser's subscription key (a point on P-256), as PushManager makes one.
P256DH = "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM"
# operationId → (role, a function of the world giving (path parameters, body)), called afresh for each variant.
Baseline = Callable[[dict], tuple[dict, object]]


def _group(world) -> str:
    """The workspace's approver group (made once), for the group paths."""
    group, _ = ApproverGroup.objects.get_or_create(workspace=world["config"].workspace, name="Payments")
    return group.public_id


def _days_ahead(days: int) -> str:
    return (timezone.now() + timedelta(days=days)).isoformat()


def _config(world) -> dict:
    return {"cfg": world["config"].public_id}


BASELINES: dict[str, list[tuple[str, Baseline]]] = {
    "approvals_register": [
        ("engine", lambda w: ({}, gate_body(w["config"]))),
        ("engine", lambda w: ({}, token_cap_body(w["config"]))),
        ("engine", lambda w: ({}, question_body(w["config"]))),
        ("engine", lambda w: ({}, plan_body(w["config"]))),
    ],
    "approvals_decide": [
        ("admin", lambda w: ({"apr": w["pending"]().public_id}, {"decision": "approve", "reason": "Checked"})),
    ],
    "approvals_outcome": [
        ("engine", lambda w: ({"apr": w["approved"]().public_id}, {"status": "executed", "detail": "Deleted"})),
    ],
    "configs_create": [("admin", lambda w: ({}, {"name": "Billing agent"}))],
    "configs_partial_update": [("admin", lambda w: (_config(w), {"name": "Support", "questions_notify": []}))],
    "configs_contacts_create": [
        ("admin", lambda w: (_config(w), {"name": "Ops", "channel": "email", "channel_ref": "${HITL_ACME_OPS_EMAIL}"}))
    ],
    "configs_contacts_partial_update": [
        ("admin", lambda w: (_config(w) | {"con": w["contact"].public_id}, {"name": "On call, nights"}))
    ],
    "configs_pin_create": [("admin", lambda w: (_config(w), {"version": 1}))],
    "configs_publish_create": [("admin", lambda w: (_config(w), {"note": "Tightened"}))],
    "configs_rules_create": [
        ("admin", lambda w: (_config(w), {"kind": "delete", "match": "drop_table", "message": "Tables are final."}))
    ],
    "configs_rules_partial_update": [
        ("admin", lambda w: (_config(w) | {"rul": w["rule"].public_id}, {"message": "Deletes are final."}))
    ],
    "configs_simulate": [("admin", lambda w: (_config(w), {"days": 1}))],
    "grants_open_window": [
        (
            "admin",
            lambda w: (
                {},
                {
                    "scope": "rule",
                    "rule_id": w["config"].versions.get(number=1).rules[0]["id"],
                    "expires_at": (timezone.now() + timedelta(hours=1)).isoformat(),
                    "reason": "Migration window",
                },
            ),
        )
    ],
    "push_subscribe": [
        (
            "admin",
            lambda w: (
                {},
                {
                    "endpoint": "https://fcm.googleapis.com/fcm/send/abc",
                    "keys": {
                        "p256dh": P256DH,
                        "auth": "tBHItJI5svbpez7KI4CCXg",
                    },
                },
            ),
        )
    ],
    "runs_halt": [("admin", lambda w: ({}, {"run_id": "run_9", "reason": "Runaway loop"}))],
    "approvals_decide_batch": [
        ("admin", lambda w: ({}, {"ids": [w["pending"]().public_id], "decision": "approve", "reason": "Checked"}))
    ],
    "groups_create": [("admin", lambda w: ({}, {"name": new_public_id("Group")}))],
    "groups_member_add": [("admin", lambda w: ({"grp": _group(w)}, {"email": "bob@acme.test"}))],
    "me_delegation_set": [
        ("admin", lambda w: ({}, {"delegate": "bob@acme.test", "until": _days_ahead(2), "reason": "Away"}))
    ],
    "workspace_freeze": [("admin", lambda w: ({}, {"reason": "Incident"}))],
    "approval_comments_add": [("admin", lambda w: ({"apr": w["pending"]().public_id}, {"text": "Checked"}))],
    "approval_snooze": [
        (
            "admin",
            lambda w: ({"apr": w["pending"]().public_id}, {"until": (timezone.now() + timedelta(hours=1)).isoformat()}),
        )
    ],
    # The engine key that registered it may withdraw it.
    "approvals_withdraw": [("engine", lambda w: ({"apr": w["pending"]().public_id}, {"reason": "Not needed"}))],
}
# Operations without a body are called by an admin, but for these.
CALLED_BY = {"configs_served": "engine"}
# Operations without a body: the ids their paths take, and who calls them.
PATH_IDS: dict[str, Callable[[dict], str]] = {
    "cfg": lambda w: w["config"].public_id,
    "con": lambda w: w["contact"].public_id,
    "rul": lambda w: w["rule"].public_id,
    "apr": lambda w: w["pending"]().public_id,
    "number": lambda w: "1",
    "run_id": lambda w: "run_9",
    "grt": lambda w: "grt_missing",
    "prp": lambda w: "prp_missing",
    "action": lambda w: "accept",
    "grp": lambda w: _group(w),
    "email": lambda w: "bob@acme.test",
    "dlg": lambda w: "dlg_missing",
}


def _operations(schema: dict) -> Iterator[tuple[str, str, dict]]:
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            yield path, method.upper(), operation


def _resolved(schema: dict, node: dict) -> dict:
    while "$ref" in node or ("allOf" in node and len(node["allOf"]) == 1):
        if "$ref" in node:
            node = {
                **schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]],
                **{k: v for k, v in node.items() if k != "$ref"},
            }
        else:
            node = {**_resolved(schema, node["allOf"][0]), **{k: v for k, v in node.items() if k != "allOf"}}
    return node


def _body_schema(schema: dict, operation: dict, body) -> dict:
    node = _resolved(schema, operation["requestBody"]["content"]["application/json"]["schema"])
    if "oneOf" in node:  # the registration: the kind's own schema
        mapping = node["discriminator"]["mapping"]
        node = _resolved(schema, {"$ref": mapping[body[node["discriminator"]["propertyName"]]]})
    return node


def _string_limit(node: dict, unbounded: int) -> int | None:
    """The length a string field is held to; None for a field that is not free text (an enum, a date)."""
    if node.get("type") != "string" or "enum" in node or node.get("format") in {"date-time", "date", "uri"}:
        return None
    pattern = node.get("pattern")
    if pattern and pattern != "^[^\\u0000]*$":
        return None  # a shape (a digest, an id) that no run of one character fits
    return node.get("maxLength", unbounded)


def _body_variants(schema: dict, node: dict, body, path: tuple = ()) -> Iterator[tuple[str, object]]:
    """(what changed, the body) for each declared field of `node` (and of the objects and lists `body` holds)."""
    node = _resolved(schema, node)
    if node.get("type") == "object" or "properties" in node:
        for name, field in node.get("properties", {}).items():
            if field.get("readOnly"):
                continue
            where = path + (name,)
            yield f"{'.'.join(map(str, where))} = lone surrogate", _set(body, where, SURROGATE)
            field = _resolved(schema, field)
            limit = _string_limit(field, UNBOUNDED_BODY)
            if limit is not None:
                yield f"{'.'.join(map(str, where))} at {limit}", _set(body, where, "x" * limit)
                yield f"{'.'.join(map(str, where))} at {limit + 1}", _set(body, where, "x" * (limit + 1))
            inner = _get(body, where)
            if isinstance(inner, dict | list):
                yield from _body_variants(schema, field, body, where)
    elif node.get("type") == "array" and isinstance(_get(body, path), list) and _get(body, path):
        item = _resolved(schema, node.get("items", {}))
        where = path + (0,)
        limit = _string_limit(item, UNBOUNDED_BODY)
        if limit is not None:
            yield f"{'.'.join(map(str, where))} at {limit + 1}", _set(body, where, "x" * (limit + 1))
            yield f"{'.'.join(map(str, where))} = lone surrogate", _set(body, where, SURROGATE)
        if isinstance(_get(body, where), dict | list):
            yield from _body_variants(schema, item, body, where)


def _get(body, where: tuple):
    for step in where:
        if isinstance(body, dict):
            body = body.get(step)
        elif isinstance(body, list) and isinstance(step, int) and step < len(body):
            body = body[step]
        else:
            return None
    return body


def _set(body, where: tuple, value):
    changed = copy.deepcopy(body)
    node = changed
    for step in where[:-1]:
        node = node[step]
    node[where[-1]] = value
    return changed


def _parameter_variants(operation: dict) -> Iterator[tuple[str, str, str, str]]:
    """(where, name, what changed, the value) for each path and query parameter."""
    for parameter in operation.get("parameters", []):
        limit = _string_limit(parameter.get("schema", {}), UNBOUNDED_PARAMETER)
        name, where = parameter["name"], parameter["in"]
        if where not in {"path", "query"}:
            continue
        # A lone surrogate cannot be UTF-8: on the wire it is the bytes a careless client would encode it as.
        yield where, name, f"{name} = lone surrogate", "%ED%A0%80"
        if limit is not None:
            yield where, name, f"{name} at {limit}", "x" * limit
            yield where, name, f"{name} at {limit + 1}", "x" * (limit + 1)


def _call(world: dict, role: str, method: str, path: str, path_values: dict, query: str = "", body=...):
    url = world["url"] + path.format(**{name: quote(value, safe="%") for name, value in path_values.items()})
    headers = {"Authorization": f"Bearer {world['tokens'][role]}", "Content-Type": "application/json"}
    # json.dumps escapes every non-ASCII character, a lone surrogate included, as JSON says it may be sent.
    data = None if body is ... else json.dumps(body).encode()
    return requests.request(method, url + (f"?{query}" if query else ""), data=data, headers=headers, timeout=60)


def test_no_field_at_or_past_its_limit_nor_any_lone_surrogate_answers_5xx(world):
    schema = requests.get(f"{world['url']}/api/schema/", params={"format": "json"}, timeout=30).json()
    failures, sent = [], 0
    for path, method, operation in _operations(schema):
        operation_id = operation["operationId"]
        if operation_id in NOT_SENT_HERE:
            continue
        has_body = "requestBody" in operation and "application/json" in operation["requestBody"]["content"]
        if has_body:
            assert operation_id in BASELINES, f"{operation_id} takes a body: give it a baseline here"
        baselines = BASELINES.get(operation_id) or [(CALLED_BY.get(operation_id, "admin"), lambda w: ({}, ...))]
        for role, baseline in baselines:
            path_values, body = baseline(world)
            if body is not ...:
                node = _body_schema(schema, operation, body)
                for changed, variant in _body_variants(schema, node, body):
                    path_values, _ = baseline(world)  # a fresh request where the operation changes it
                    response = _call(world, role, method, path, path_values, body=variant)
                    sent += 1
                    # An id that names nothing (config_id, rule_id) is a 404, as in a path (docs/api.md).
                    field = changed.split(" ")[0]
                    allowed = {400, 404} if field.endswith("_id") or field.startswith("ids") else {400}
                    if not (response.status_code < 300 or response.status_code in allowed):
                        failures.append(f"{method} {path} {changed}: {response.status_code} {response.text[:200]}")
            for where, name, changed, value in _parameter_variants(operation):
                values = {**{k: f(world) for k, f in PATH_IDS.items() if "{" + k + "}" in path}, **path_values}
                query = ""
                if where == "path":
                    values[name] = value
                else:
                    query = f"{name}={value}"
                if operation_id in BASELINES and body is not ...:
                    response = _call(world, role, method, path, values, query, body=body)
                else:
                    response = _call(world, role, method, path, values, query)
                sent += 1
                allowed = {400, 404} if where == "path" else {400}
                if not (response.status_code < 300 or response.status_code in allowed):
                    failures.append(f"{method} {path} {changed}: {response.status_code} {response.text[:200]}")
    assert sent > 300
    assert not failures, "\n".join(failures)
