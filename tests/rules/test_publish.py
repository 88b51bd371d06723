"""Publish freezes the draft; pin and roll back change what is served; Free refuses enabled rules."""

import pytest
from django.db import DatabaseError, connection, transaction

from rules.models import ConfigVersion
from rules.selectors import served_number, served_version

from ..helpers import change_draft, error_of, make_config, make_rule, make_workspace, publish


def test_it_publishes_the_draft_as_the_next_version(alice_api, acme, alice):
    config = make_config(acme, pass_information_level="full", token_cap_per_turn=1000)
    rule = make_rule(config, kind="worker", match="researcher", message="Spawning costs money")
    alice_api.post(f"/api/v1/configs/{config.public_id}/contacts", json={"name": "Leads", "channel": "none"})

    response = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", json={"note": "First cut"})
    assert response.status_code == 201, response.text
    version = response.json()
    assert version["config_id"] == config.public_id
    assert version["version"] == 1
    assert version["published_by"] == "alice@acme.test"
    assert version["note"] == "First cut"
    assert version["served"] is True
    assert version["published_at"]
    assert version["rules"] == [rule.frozen()]
    assert [c["name"] for c in version["contacts"]] == ["Leads"]
    assert version["token_caps"] == {"per_turn": 1000, "mode": "prompt"}
    assert version["pass_information_level"] == "full"

    unchanged = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", json={"note": "again"})
    assert unchanged.status_code == 409
    assert error_of(unchanged)["message"].startswith("The draft matches v1: there is nothing new to publish.")
    change_draft(config)
    second = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", json={})
    assert second.json()["version"] == 2 and second.json()["note"] == ""
    assert alice_api.get(f"/api/v1/configs/{config.public_id}").json()["latest_version"] == 2


def test_it_never_changes_a_version_when_the_draft_changes_afterwards(alice_api, acme, alice):
    config = make_config(acme)
    rule = make_rule(config, kind="cell", match="*", message="before")
    frozen = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", json={}).json()

    base = f"/api/v1/configs/{config.public_id}"
    alice_api.patch(f"{base}/rules/{rule.public_id}", json={"message": "after", "enabled": False})
    alice_api.post(f"{base}/rules", json={})
    alice_api.patch(base, json={"pass_information_level": "none", "token_caps": {"per_turn": 5}})
    alice_api.post(f"{base}/contacts", json={"name": "Late", "channel": "none"})

    assert alice_api.get(f"{base}/versions/1").json() == frozen
    assert ConfigVersion.objects.get().rules[0]["message"] == "before"


def test_it_refuses_a_raw_update_of_a_version_in_the_database(acme):
    config = make_config(acme)
    version = publish(config, note="frozen")
    with pytest.raises(DatabaseError, match="never changes"), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE rules_configversion SET note = 'rewritten' WHERE id = %s", [version.pk])
    assert ConfigVersion.objects.get().note == "frozen"
    with pytest.raises(TypeError):
        ConfigVersion.objects.filter(pk=version.pk).update(note="rewritten")


def test_it_serves_the_pinned_version_and_marks_it_served(alice_api, acme):
    config = make_config(acme)
    make_rule(config)
    publish(config)
    make_rule(config, kind="worker", match="*")
    publish(config)
    base = f"/api/v1/configs/{config.public_id}"
    assert served_number(config) == 2

    rolled = alice_api.post(f"{base}/pin", json={"version": 1})
    assert rolled.status_code == 200, rolled.text
    assert rolled.json()["version"] == 1 and rolled.json()["served"] is True
    config.refresh_from_db()
    assert served_version(config).number == 1
    assert len(served_version(config).rules) == 1
    assert [(v["version"], v["served"]) for v in alice_api.get(f"{base}/versions").json()["results"]] == [
        (2, False),
        (1, True),
    ]
    assert alice_api.get(base).json()["served_version"] == 1
    assert alice_api.get(base).json()["latest_version"] == 2

    # Pinning a newer version forward works the same way.
    assert alice_api.post(f"{base}/pin", json={"version": 2}).json()["served"] is True
    config.refresh_from_db()
    assert served_number(config) == 2


def test_it_releases_the_pin_when_publishing(alice_api, acme):
    config = make_config(acme)
    publish(config)
    change_draft(config)
    publish(config)
    base = f"/api/v1/configs/{config.public_id}"
    alice_api.post(f"{base}/pin", json={"version": 1})
    change_draft(config)
    assert alice_api.post(f"{base}/publish", json={}).json()["served"] is True
    assert alice_api.get(base).json()["served_version"] == 3


@pytest.mark.parametrize("body, status", [({"version": 7}, 404), ({"version": "one"}, 400), ({}, 400)])
def test_it_refuses_to_pin_a_missing_version(alice_api, acme, body, status):
    config = make_config(acme)
    publish(config)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/pin", json=body)
    assert response.status_code == status
    error_of(response)
    config.refresh_from_db()
    assert config.pinned_version is None


def test_it_refuses_an_over_long_note(alice_api, acme):
    config = make_config(acme)
    response = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", json={"note": "x" * 2001})
    assert response.status_code == 400
    assert "note" in error_of(response)["fields"]
    assert not ConfigVersion.objects.exists()


@pytest.fixture
def free_admin_api(db, make_api):
    from ..helpers import make_member, make_token

    hobby = make_workspace("hobby", plan="free")
    user = make_member(hobby, "dora@hobby.test", "admin")
    return hobby, make_api(make_token(hobby, user=user))


def test_it_refuses_to_publish_an_enabled_rule_on_the_free_plan(free_admin_api):
    hobby, api = free_admin_api
    config = make_config(hobby)
    rule = make_rule(config)
    response = api.post(f"/api/v1/configs/{config.public_id}/publish", json={})
    assert response.status_code == 403
    error = error_of(response)
    assert error["code"] == "plan_required"
    assert "Pro" in error["message"] and "Disable" in error["message"]
    assert not ConfigVersion.objects.exists()

    # The same rule disabled publishes.
    api.patch(f"/api/v1/configs/{config.public_id}/rules/{rule.public_id}", json={"enabled": False})
    published = api.post(f"/api/v1/configs/{config.public_id}/publish", json={})
    assert published.status_code == 201, published.text
    assert published.json()["rules"][0]["enabled"] is False
