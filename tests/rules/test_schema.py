"""/api/schema/ describes what the admin API does: every answer validates against its documented schema."""

import pytest

from ..helpers import make_config, make_rule, make_workspace
from ..schema import Schema


@pytest.fixture
def schema(anonymous_api) -> Schema:
    return Schema.served(anonymous_api)


def test_it_answers_as_the_schema_says_for_each_admin_endpoint(schema, alice_api, bob_api, acme):
    def call(api, method, template, body=None, **ids):
        response = api.request(method, template.format(**ids), json=body)
        schema.check_response(method, template, response)
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


def test_it_documents_the_free_plan_refusal(schema, make_api):
    from ..helpers import make_member, make_token

    hobby = make_workspace("hobby", plan="free")
    api = make_api(make_token(hobby, user=make_member(hobby, "dora@hobby.test", "admin")))
    config = make_config(hobby)
    make_rule(config)
    publish_response = api.post(f"/api/v1/configs/{config.public_id}/publish", json={})
    assert publish_response.status_code == 403
    schema.check_response("POST", "/api/v1/configs/{cfg}/publish", publish_response)
    assert (
        "plan_required"
        in schema.document["paths"]["/api/v1/configs/{cfg}/publish"]["post"]["responses"]["403"]["description"]
    )
