from workspaces.models import ApiToken, hash_token

from ..helpers import error_of, make_token


def test_it_stores_only_the_hash_of_a_token(acme, alice):
    raw = make_token(acme, user=alice)
    token = ApiToken.objects.get()
    assert token.digest == hash_token(raw)
    assert raw not in (token.digest, token.hint)
    assert token.hint == raw[:11]


def test_it_answers_401_in_the_error_shape_without_a_token(anonymous_api):
    response = anonymous_api.get("/api/v1/approvals")
    assert response.status_code == 401
    assert error_of(response)["code"] == "not_authenticated"


def test_it_refuses_a_revoked_token(make_api, acme):
    from workspaces.services import token_revoke

    raw = make_token(acme, engine="e1")
    token_revoke(token=ApiToken.objects.get())
    response = make_api(raw).get("/api/v1/approvals")
    assert response.status_code == 401
    assert "revoked" in error_of(response)["message"]


def test_it_answers_413_for_a_body_over_256_kib(engine_api):
    response = engine_api.post(
        "/api/v1/approvals", data=b"x" * (256 * 1024 + 1), headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert error_of(response)["code"] == "payload_too_large"


def test_it_answers_json_404_for_an_unknown_api_path(engine_api):
    response = engine_api.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"
