"""/api/schema/ describes what the admin API does: every answer validates against its documented schema."""

import jsonschema
import pytest

from ..helpers import make_config, make_rule, make_workspace


def _json_schema(node):
    """OpenAPI 3.0's `nullable: true` is not JSON Schema: turn it into `anyOf [..., null]`."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    node = {key: _json_schema(value) for key, value in node.items()}
    if node.pop("nullable", False):
        return {"anyOf": [node, {"type": "null"}]}
    return node


class Schema:
    def __init__(self, document: dict):
        self.document = document
        self.components = _json_schema(document["components"])

    def check(self, response, path: str, method: str) -> None:
        operation = self.document["paths"][path][method.lower()]
        status = str(response.status_code)
        assert status in operation["responses"], f"{method} {path} answered {status}, undocumented"
        content = operation["responses"][status].get("content")
        if content is None:
            assert not response.content, response.text
            return
        schema = {**_json_schema(content["application/json"]["schema"]), "components": self.components}
        jsonschema.Draft202012Validator(schema).validate(response.json())


@pytest.fixture
def schema(anonymous_api) -> Schema:
    response = anonymous_api.get("/api/schema/", params={"format": "json"})
    assert response.status_code == 200
    return Schema(response.json())


def test_it_answers_as_the_schema_says_for_each_admin_endpoint(schema, alice_api, bob_api, acme):
    def call(api, method, template, body=None, **ids):
        response = api.request(method, template.format(**ids), json=body)
        schema.check(response, template, method)
        return response

    cfg = call(alice_api, "POST", "/api/v1/configs", {"name": "Support"}).json()["id"]
    call(alice_api, "POST", "/api/v1/configs", {"name": ""})
    call(alice_api, "GET", "/api/v1/configs")
    call(bob_api, "GET", "/api/v1/configs")
    call(alice_api, "GET", "/api/v1/configs/{cfg}", cfg=cfg)
    call(alice_api, "GET", "/api/v1/configs/{cfg}", cfg="cfg_missing")
    call(alice_api, "PATCH", "/api/v1/configs/{cfg}", {"token_caps": {"per_turn": 10, "mode": "stop"}}, cfg=cfg)
    call(alice_api, "PATCH", "/api/v1/configs/{cfg}", {"pass_information_level": "all"}, cfg=cfg)

    rul = call(alice_api, "POST", "/api/v1/configs/{cfg}/rules", {}, cfg=cfg).json()["id"]
    call(alice_api, "POST", "/api/v1/configs/{cfg}/rules", {"kind": "worker", "match": ""}, cfg=cfg)
    call(alice_api, "GET", "/api/v1/configs/{cfg}/rules", cfg=cfg)
    call(alice_api, "GET", "/api/v1/configs/{cfg}/rules/{rul}", cfg=cfg, rul=rul)
    call(alice_api, "PATCH", "/api/v1/configs/{cfg}/rules/{rul}", {"message": "m"}, cfg=cfg, rul=rul)

    con = call(alice_api, "POST", "/api/v1/configs/{cfg}/contacts", {"name": "L", "channel": "none"}, cfg=cfg).json()[
        "id"
    ]
    call(alice_api, "GET", "/api/v1/configs/{cfg}/contacts", cfg=cfg)
    call(alice_api, "GET", "/api/v1/configs/{cfg}/contacts/{con}", cfg=cfg, con=con)
    call(alice_api, "PATCH", "/api/v1/configs/{cfg}/contacts/{con}", {"channel_ref": "x@y.test"}, cfg=cfg, con=con)

    call(alice_api, "POST", "/api/v1/configs/{cfg}/publish", {"note": "one"}, cfg=cfg)
    call(alice_api, "POST", "/api/v1/configs/{cfg}/publish", {}, cfg=cfg)
    call(alice_api, "GET", "/api/v1/configs/{cfg}/versions", cfg=cfg)
    call(alice_api, "GET", "/api/v1/configs/{cfg}/versions/{number}", cfg=cfg, number=1)
    call(alice_api, "GET", "/api/v1/configs/{cfg}/versions/{number}", cfg=cfg, number=9)
    call(alice_api, "POST", "/api/v1/configs/{cfg}/pin", {"version": 1}, cfg=cfg)
    call(alice_api, "POST", "/api/v1/configs/{cfg}/pin", {"version": 9}, cfg=cfg)
    call(bob_api, "POST", "/api/v1/configs/{cfg}/pin", {"version": 1}, cfg=cfg)

    call(alice_api, "DELETE", "/api/v1/configs/{cfg}/contacts/{con}", cfg=cfg, con=con)
    call(alice_api, "DELETE", "/api/v1/configs/{cfg}/rules/{rul}", cfg=cfg, rul=rul)


def test_it_documents_the_free_plan_refusal(schema, live_server):
    from ..helpers import Api, make_member, make_token

    hobby = make_workspace("hobby", plan="free")
    api = Api(live_server.url, make_token(hobby, user=make_member(hobby, "dora@hobby.test", "admin")))
    config = make_config(hobby)
    make_rule(config)
    publish_response = api.post(f"/api/v1/configs/{config.public_id}/publish", json={})
    assert publish_response.status_code == 403
    schema.check(publish_response, "/api/v1/configs/{cfg}/publish", "POST")
    assert (
        "plan_required"
        in schema.document["paths"]["/api/v1/configs/{cfg}/publish"]["post"]["responses"]["403"]["description"]
    )
