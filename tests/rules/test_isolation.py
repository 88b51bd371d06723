"""Every admin endpoint and page: anonymous, reviewer, engine key and another workspace's admin are
refused (401 / 403 / 404, or the login page), and the admin is allowed."""

import pytest
from django.test import Client
from django.urls import reverse

from contacts.services import contact_create
from rules.models import Config, ConfigVersion, Rule

from ..helpers import change_draft, make_config, make_rule, publish


@pytest.fixture
def setup(acme, alice):
    from contacts.models import Contact

    config = make_config(acme)
    rule = make_rule(config, kind="worker", match="researcher")
    contact = contact_create(config=config, name="Leads", channel="none")
    publish(config, user=alice)
    change_draft(config)
    publish(config, user=alice)
    change_draft(config)  # so that the admin's publish below has something new to freeze
    assert Contact.objects.count() == 1
    return {"cfg": config.public_id, "rul": rule.public_id, "con": contact.public_id}


# (method, path, body, the admin's status)
ENDPOINTS = [
    ("GET", "/api/v1/configs/{cfg}", None, 200),
    ("PATCH", "/api/v1/configs/{cfg}", {"name": "Renamed"}, 200),
    ("GET", "/api/v1/configs/{cfg}/rules", None, 200),
    ("POST", "/api/v1/configs/{cfg}/rules", {}, 201),
    ("GET", "/api/v1/configs/{cfg}/rules/{rul}", None, 200),
    ("PATCH", "/api/v1/configs/{cfg}/rules/{rul}", {"enabled": False}, 200),
    ("DELETE", "/api/v1/configs/{cfg}/rules/{rul}", None, 204),
    ("GET", "/api/v1/configs/{cfg}/contacts", None, 200),
    ("POST", "/api/v1/configs/{cfg}/contacts", {"name": "New", "channel": "none"}, 201),
    ("GET", "/api/v1/configs/{cfg}/contacts/{con}", None, 200),
    ("PATCH", "/api/v1/configs/{cfg}/contacts/{con}", {"name": "Renamed"}, 200),
    ("DELETE", "/api/v1/configs/{cfg}/contacts/{con}", None, 204),
    ("POST", "/api/v1/configs/{cfg}/publish", {"note": "n"}, 201),
    ("GET", "/api/v1/configs/{cfg}/versions", None, 200),
    ("GET", "/api/v1/configs/{cfg}/versions/1", None, 200),
    ("POST", "/api/v1/configs/{cfg}/pin", {"version": 1}, 200),
]


def _state() -> tuple:
    """What a refused call must leave unchanged."""
    config = Config.objects.get(workspace__slug="acme")
    return (
        config.name,
        config.pinned_version,
        list(Rule.objects.values_list("public_id", "enabled")),
        ConfigVersion.objects.filter(config=config).count(),
    )


@pytest.mark.parametrize("method, path, body, admin_status", ENDPOINTS, ids=[f"{m} {p}" for m, p, *_ in ENDPOINTS])
def test_it_lets_only_the_workspaces_admin_use_the_endpoint(
    setup, anonymous_api, bob_api, engine_api, charlie_api, alice_api, method, path, body, admin_status
):
    url = path.format(**setup)
    before = _state()
    for api, status in ((anonymous_api, 401), (bob_api, 403), (engine_api, 403), (charlie_api, 404)):
        response = api.request(method, url, json=body)
        assert response.status_code == status, (api, response.text)
        assert set(response.json()) == {"error"}
        assert setup["cfg"] not in response.text
    assert _state() == before

    response = alice_api.request(method, url, json=body)
    assert response.status_code == admin_status, response.text


def test_it_lists_and_creates_configs_only_in_the_callers_workspace(
    setup, anonymous_api, bob_api, engine_api, charlie_api, alice_api
):
    assert anonymous_api.get("/api/v1/configs").status_code == 401
    assert bob_api.get("/api/v1/configs").status_code == 403
    assert engine_api.post("/api/v1/configs", json={"name": "x"}).status_code == 403
    assert charlie_api.get("/api/v1/configs").json()["results"] == []
    created = charlie_api.post("/api/v1/configs", json={"name": "Globex agent"}).json()
    assert Config.objects.get(public_id=created["id"]).workspace.slug == "globex"
    assert [c["id"] for c in alice_api.get("/api/v1/configs").json()["results"]] == [setup["cfg"]]


# (method, url name, url args, form data, reviewer may GET it, the admin's status)
PAGES = [
    ("GET", "rules:configs", [], None, True, 200),
    ("POST", "rules:configs", [], {"name": "Another"}, False, 302),
    ("POST", "rules:config_rename", ["cfg"], {"name": "Renamed"}, False, 302),
    ("GET", "rules:rules", ["cfg"], None, True, 200),
    ("GET", "rules:rule_add", ["cfg"], None, False, 200),
    ("POST", "rules:rule_add", ["cfg"], {"kind": "delete", "which": "any", "point": "entry", "order": 10}, False, 302),
    ("GET", "rules:rule_edit", ["cfg", "rul"], None, False, 200),
    (
        "POST",
        "rules:rule_edit",
        ["cfg", "rul"],
        {"kind": "cell", "which": "any", "match": "", "point": "exit", "order": 3},
        False,
        302,
    ),
    ("POST", "rules:rule_toggle", ["cfg", "rul"], {}, False, 302),
    ("POST", "rules:rule_delete", ["cfg", "rul"], {}, False, 302),
    ("GET", "rules:settings", ["cfg"], None, True, 200),
    (
        "POST",
        "rules:settings",
        ["cfg"],
        {"name": "S", "pass_information_level": "none", "token_cap_per_turn": "", "token_cap_mode": "stop"},
        False,
        302,
    ),
    ("POST", "rules:publish", ["cfg"], {"note": "n"}, False, 302),
    ("POST", "rules:pin", ["cfg"], {"version": 1}, False, 302),
    ("GET", "rules:version", ["cfg", 1], None, True, 200),
    ("GET", "contacts:contacts", ["cfg"], None, True, 200),
    ("POST", "contacts:contacts", ["cfg"], {"name": "New", "channel": "none", "channel_ref": ""}, False, 302),
    ("GET", "contacts:contact_edit", ["cfg", "con"], None, False, 200),
    (
        "POST",
        "contacts:contact_edit",
        ["cfg", "con"],
        {"name": "Renamed", "channel": "none", "channel_ref": ""},
        False,
        302,
    ),
    ("POST", "contacts:contact_delete", ["cfg", "con"], {}, False, 302),
]


def _client(user=None) -> Client:
    client = Client(enforce_csrf_checks=False)
    if user is not None:
        client.force_login(user)
    return client


@pytest.mark.parametrize(
    "method, name, args, data, reviewer_reads, admin_status", PAGES, ids=[f"{p[0]} {p[1]}" for p in PAGES]
)
def test_it_lets_only_the_workspaces_admin_change_a_page(
    setup, bob, charlie, alice, method, name, args, data, reviewer_reads, admin_status
):
    url = reverse(name, args=[setup.get(a, a) for a in args])
    send = (lambda c: c.get(url)) if method == "GET" else (lambda c: c.post(url, data))
    before = _state()

    anonymous = send(_client())
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")

    reviewer = send(_client(bob))
    assert reviewer.status_code == (200 if reviewer_reads else 403)

    outsider = send(_client(charlie))
    if name == "rules:configs":
        # The list is per workspace: charlie sees (or creates in) his own, never acme's.
        assert setup["cfg"] not in outsider.content.decode()
    else:
        assert outsider.status_code == 404
    assert _state() == before

    admin = send(_client(alice))
    assert admin.status_code == admin_status, admin.content.decode()[:2000]


@pytest.mark.parametrize("name", ["rules:rules", "rules:settings", "contacts:contacts", "rules:version"])
def test_it_shows_a_reviewer_no_edit_controls(setup, bob, name):
    args = [setup["cfg"], 1] if name == "rules:version" else [setup["cfg"]]
    html = _client(bob).get(reverse(name, args=args)).content.decode()
    for control in (
        "Add rule",
        "Publish v",
        "Roll back",
        "Pin v",
        "Edit</a>",
        "Delete</button>",
        "Save",
        "Add contact",
    ):
        assert control not in html
    assert "Serving v2" in html
