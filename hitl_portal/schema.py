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
    "description": "The body was sent chunked to a server that cannot read it so (a WSGI server without "
    "`wsgi.input_terminated`): send it with a Content-Length. The production (ASGI) server reads chunked bodies.",
    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
}


# POSTs whose empty body means something (a default rule; a publish without a note). Every other
# POST needs its body, and says so: a generated client then cannot call it without one.
OPTIONAL_BODIES = {"configs_rules_create", "configs_publish_create"}


def tidy_operations(result: dict, generator: "SchemaGenerator", request: Request | None, public: bool) -> dict:
    """Consistent operationIds and tags; bodies required where they are; 411 and 413 on every operation that takes one;
    string query parameters at least one character long (hitl_portal.query refuses a blank one)."""
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
                # A query parameter sent blank is a 400 (hitl_portal.query): the schema says so.
                if parameter.get("schema", {}).get("type") == "string":
                    parameter["schema"].setdefault("minLength", 1)
            if "requestBody" in operation:
                operation["responses"].setdefault("413", BODY_TOO_LARGE)
                operation["responses"].setdefault("411", LENGTH_REQUIRED)
                if method == "post" and operation["operationId"] not in OPTIONAL_BODIES:
                    operation["requestBody"]["required"] = True
    return result
