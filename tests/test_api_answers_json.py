"""Every /api/ answer is JSON whatever DEBUG is: schemathesis (ST105) met Django's HTML debug 404 for a path
no route takes, such as a version number sent as `null,null`."""

import pytest

from tests.helpers import make_config, make_token


@pytest.mark.parametrize("debug", [True, False])
@pytest.mark.parametrize("tail", ["/versions/null,null", "/no-such-thing", "/rules/rul_x/extra"])
def test_a_path_no_route_takes_answers_the_json_404(client, settings, acme, alice, debug, tail):
    settings.DEBUG = debug
    config = make_config(acme)
    client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {make_token(acme, user=alice)}"

    response = client.get(f"/api/v1/configs/{config.public_id}{tail}")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"]["code"] == "not_found"


def test_a_page_path_no_route_takes_still_answers_the_html_404(client, settings):
    settings.DEBUG = False

    response = client.get("/hitl/no-such-page/")

    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
