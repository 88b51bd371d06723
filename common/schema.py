"""The OpenAPI schema as generated clients and schemathesis read it: one pass over every operation.

drf-spectacular's defaults mix `v1_configs_create` with `configs_list` and tag function-based
views `v1`; each endpoint should not have to restate the 413 every body can earn, nor that a query
parameter sent blank is refused. Fixed here, once.
"""

from typing import TYPE_CHECKING

from rest_framework.request import Request

if TYPE_CHECKING:  # for the annotation only
    from drf_spectacular.generators import SchemaGenerator

BAD_QUERY = {
    "description": "A query parameter outside what it declares (a `limit` past 200, a blank value, a NUL byte); "
    "`fields` names it.",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
BODY_TOO_LARGE = {
    "description": "The body is over 256 KiB (sent chunked: read up to the limit, then refused).",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}
LENGTH_REQUIRED = {
    "description": "The body was sent chunked (`Transfer-Encoding: chunked`) to a server set up without chunked "
    "reads: send it with a Content-Length. The portal's own server reads chunked bodies.",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


# What each component means to a caller. drf-spectacular would take a serializer's docstring (or its
# base class's), which is written for whoever maintains the code; the schema is read by API users and
# their generated clients, so its text is written here, and a component not listed has none.
COMPONENT_DESCRIPTIONS = {
    "ApprovalRequest": "An approval request as every endpoint answers it: what was asked, its status, the "
    "decision and, once reported, the outcome.",
    "ApprovalRegistrationRequest": "A registration, told apart by `kind`: a gated call (`gate`), a token cap "
    "breach (`token_cap`), questions for a person (`question`) or a plan to approve (`plan`).",
    "GateRegistrationRequest": "A gated call. Boundary, point and message come from the frozen rule, never from here.",
    "TokenCapRegistrationRequest": 'A token cap breach: parks the run as a "Token cap reached" card.',
    "RegistrationAnswer": "What a registration answers, told apart by `status`: `inert` (HITL is inert, nothing "
    "stored) or `allowed` (the rule's condition is false, or it is a shadow rule: nothing stored), both 200; any "
    "other status is the request — created (201), or the one first created, as it is now (200, an idempotent "
    "replay).",
    "QuestionRegistrationRequest": "Questions for a person (1–8), answered on the request's page or a channel.",
    "PlanRegistrationRequest": "A plan (Markdown) for a person to approve or send back to revise.",
    "Inert": "The answer when HITL is inert: nothing was stored, the call may proceed.",
    "DecisionOutput": "The approval request as returned everywhere, plus whether it had been decided before.",
    "OutcomeReported": "The request after an outcome report; `already_reported` mirrors a decision's "
    "`already_decided`.",
    "Error": "Every 4xx and 5xx answer: `code` is stable, `message` says what to change, `fields` maps an "
    "input's name to its problem.",
    "ContactCreateRequest": "A new contact: its name and channel (and the channel's reference where it takes one).",
    "PatchedContactInputRequest": "Any of a contact's fields; a channel reference is a `${HITL_…}` placeholder, "
    "never an address or a secret.",
    "RuleInputRequest": "A draft rule: its kind, what it matches, and what the reviewer reads.",
    "PatchedRuleInputRequest": "Any of a draft rule's fields; the match is checked against the rule's kind.",
    "Rule": "A rule of the draft, or of a published version as it was frozen when published.",
}

# Components that are the approval request plus a field or two: stated as the request (one component, reused)
# and what they add, so a generated client reads one ApprovalRequest shape and not several copies of it.
EXTENDS_APPROVAL_REQUEST = ("DecisionOutput", "OutcomeReported")


def _extends_approval_request(components: dict) -> None:
    base = components["ApprovalRequest"]
    for name in EXTENDS_APPROVAL_REQUEST:
        component = components[name]
        own = {key: value for key, value in component["properties"].items() if key not in base["properties"]}
        required = [key for key in component.get("required", []) if key in own]
        added = {"type": "object", "properties": own, **({"required": required} if required else {})}
        components[name] = {"allOf": [{"$ref": "#/components/schemas/ApprovalRequest"}, added]}


# PostgreSQL cannot store a NUL character, so every text the API takes refuses one (docs/api.md): the
# schema says so on every string a caller sends (request bodies, query, path and header parameters).
NO_NUL = "^[^\\u0000]*$"


def _refuse_nul(schema: dict) -> None:
    """NO_NUL on `schema` and the strings nested in it, where no pattern or enum already rules NUL out."""
    if not isinstance(schema, dict):
        return
    if schema.get("type") == "string" and "pattern" not in schema and "enum" not in schema:
        if schema.get("format") not in ("binary", "date-time", "date", "uri", "email", "uuid"):
            schema["pattern"] = NO_NUL
    for key in ("properties", "patternProperties"):
        for sub in schema.get(key, {}).values():
            _refuse_nul(sub)
    for key in ("items", "additionalProperties"):
        _refuse_nul(schema.get(key))
    for key in ("oneOf", "anyOf", "allOf"):
        for sub in schema.get(key, []):
            _refuse_nul(sub)


# POSTs whose empty body means something (a default rule; a publish without a note; a withdrawal without a
# reason). Every other POST needs its body, and says so: a generated client then cannot call it without one.
OPTIONAL_BODIES = {"configs_rules_create", "configs_publish_create", "approvals_withdraw"}


def tidy_operations(result: dict, generator: "SchemaGenerator", request: Request | None, public: bool) -> dict:
    """Consistent operationIds and tags; bodies required where they are; 411 and 413 on every operation that takes one;
    string query parameters at least one character long (common.query refuses a blank one);
    component descriptions from COMPONENT_DESCRIPTIONS only; the components that extend ApprovalRequest as allOf."""
    if "ApprovalRequest" in result.get("components", {}).get("schemas", {}):
        _extends_approval_request(result["components"]["schemas"])
    for name, component in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request"):  # COMPONENT_SPLIT_REQUEST: what callers send, never what they read
            _refuse_nul(component)
        if name in COMPONENT_DESCRIPTIONS:
            component["description"] = COMPONENT_DESCRIPTIONS[name]
        else:
            component.pop("description", None)
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if not isinstance(operation, dict) or "operationId" not in operation:
                continue
            # The generated prefix follows the URLconf's common path ("v1_", "api_v1_"): never part of a name.
            operation["operationId"] = operation["operationId"].removeprefix("api_").removeprefix("v1_")
            operation["tags"] = ["reviewers" if tag in ("v1", "api") else tag for tag in operation.get("tags", [])]
            queries = [parameter for parameter in operation.get("parameters", []) if parameter.get("in") == "query"]
            if queries:
                operation["responses"].setdefault("400", BAD_QUERY)
            for parameter in queries:
                # A query parameter sent blank is a 400 (common.query): the schema says so.
                if parameter.get("schema", {}).get("type") == "string":
                    parameter["schema"].setdefault("minLength", 1)
            for parameter in operation.get("parameters", []):
                _refuse_nul(parameter.get("schema"))
            if "requestBody" in operation:
                operation["responses"].setdefault("413", BODY_TOO_LARGE)
                operation["responses"].setdefault("411", LENGTH_REQUIRED)
                if method == "post" and operation["operationId"] not in OPTIONAL_BODIES:
                    operation["requestBody"]["required"] = True
    return result
