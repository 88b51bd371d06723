"""One check of real answers against the served OpenAPI schema, for every schema test."""

import copy

import jsonschema


def as_json_schema(node):
    """OpenAPI 3.0's `nullable: true` is not JSON Schema: such a node becomes `anyOf [node, null]`."""
    if isinstance(node, list):
        return [as_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: as_json_schema(value) for key, value in node.items()}
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


class Schema:
    """/api/schema/ as the server serves it."""

    def __init__(self, document: dict) -> None:
        self.document = document
        self.components = as_json_schema(document["components"])

    @classmethod
    def served(cls, api) -> "Schema":
        response = api.get("/api/schema/", params={"format": "json"})
        assert response.status_code == 200, response.status_code
        return cls(response.json())

    def operation(self, method: str, path: str) -> dict:
        assert path in self.document["paths"], f"{path} is not in /api/schema/"
        return self.document["paths"][path][method.lower()]

    def check_response(self, method: str, path: str, response) -> None:
        """The status is documented for the operation, and the body is the documented one."""
        responses = self.operation(method, path)["responses"]
        status = str(response.status_code)
        assert status in responses, f"{method.upper()} {path} answered {status}, which the schema does not list"
        content = responses[status].get("content")
        if content is None:
            assert not response.content, response.text
            return
        self.validate(content["application/json"]["schema"], response.json())

    def check_request(self, method: str, path: str, body) -> None:
        self.validate(self.operation(method, path)["requestBody"]["content"]["application/json"]["schema"], body)

    def validate(self, schema: dict, instance) -> None:
        full = {**as_json_schema(copy.deepcopy(schema)), "components": self.components}
        jsonschema.Draft202012Validator(full).validate(instance)
