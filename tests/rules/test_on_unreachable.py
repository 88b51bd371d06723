"""A rule's on_unreachable (API, editor, versions) and the Rules tab's flag for a rule nobody can be told of."""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from contacts.services import contact_create
from rules.models import ConfigVersion, Rule

from ..helpers import error_of, make_config, make_rule


@pytest.fixture
def admin(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def rules_url(config) -> str:
    return f"/api/v1/configs/{config.public_id}/rules"


def test_a_new_rule_waits_and_reject_is_stored_and_frozen(alice_api, acme):
    config = make_config(acme)
    assert alice_api.post(rules_url(config), json={}).json()["on_unreachable"] == "wait"

    created = alice_api.post(rules_url(config), json={"kind": "worker", "match": "*", "on_unreachable": "reject"})

    assert created.status_code == 201, created.text
    assert created.json()["on_unreachable"] == "reject"
    published = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", json={}).json()
    assert [rule["on_unreachable"] for rule in published["rules"]] == ["wait", "reject"]


def test_it_refuses_another_value_naming_the_field_and_what_it_accepts(alice_api, acme):
    config = make_config(acme)

    response = alice_api.post(rules_url(config), json={"on_unreachable": "deny"})

    assert response.status_code == 400
    assert "on_unreachable" in error_of(response)["fields"]
    assert "wait, reject" in error_of(response)["fields"]["on_unreachable"]
    assert not Rule.objects.exists()


def test_versions_published_before_it_read_as_wait(alice_api, acme):
    config = make_config(acme)
    rule = make_rule(config)
    old = {key: value for key, value in rule.frozen().items() if key != "on_unreachable"}
    ConfigVersion.objects.create(
        config=config,
        number=1,
        published_at=timezone.now(),
        rules=[old],
        token_caps=config.token_caps,
        pass_information_level=config.pass_information_level,
    )

    body = alice_api.get(f"/api/v1/configs/{config.public_id}/versions/1").json()

    assert body["rules"][0]["on_unreachable"] == "wait"


def test_the_editor_sets_it(admin, acme):
    rule = make_rule(make_config(acme))
    url = reverse("rules:rule_edit", args=[rule.config.public_id, rule.public_id])
    data = {"kind": "delete", "which": "any", "match": "", "point": "entry", "enabled": "on", "order": 10}

    assert admin.post(url, {**data, "on_unreachable": "reject"}).status_code == 302

    rule.refresh_from_db()
    assert rule.on_unreachable == "reject"


def test_the_rules_tab_flags_a_rule_whose_contacts_all_lack_their_variables(admin, acme, monkeypatch):
    monkeypatch.delenv("HITL_ACME_TAB_HOOK", raising=False)
    monkeypatch.setenv("HITL_ACME_TAB_CHAT", "-100123")
    config = make_config(acme)
    hook = contact_create(
        config=config,
        name="Hook",
        channel="webhook",
        channel_ref="${HITL_ACME_TAB_HOOK}",
        secret_ref="${HITL_ACME_TAB_SECRET}",
    )
    chat = contact_create(config=config, name="Chat", channel="telegram", channel_ref="${HITL_ACME_TAB_CHAT}")
    nobody = make_rule(config, kind="delete", match="*", notify=[hook.public_id])
    somebody = make_rule(config, kind="worker", match="*", notify=[hook.public_id, chat.public_id])

    page = admin.get(reverse("rules:rules", args=[config.public_id])).content.decode()

    flagged = page.split(f'data-rule="{nobody.public_id}"')[1].split("</tr>")[0]
    fine = page.split(f'data-rule="{somebody.public_id}"')[1].split("</tr>")[0]
    assert "Nobody can be told of this rule&#x27;s requests" in flagged
    shown = flagged.replace("<wbr>", "")  # long names may break after an underscore (contacts/templatetags/reach.py)
    assert "HITL_ACME_TAB_HOOK" in shown and "HITL_ACME_TAB_SECRET" in shown
    assert "Nobody can be told" not in fine


def test_a_rule_that_names_nobody_is_flagged_only_when_it_would_end_requests(admin, acme):
    config = make_config(acme)
    waits = make_rule(config, kind="delete", match="*")
    ends = make_rule(config, kind="worker", match="*", on_unreachable="reject")

    page = admin.get(reverse("rules:rules", args=[config.public_id])).content.decode()

    assert "Nobody can be told" not in page.split(f'data-rule="{waits.public_id}"')[1].split("</tr>")[0]
    assert "it names no contact" in page.split(f'data-rule="{ends.public_id}"')[1].split("</tr>")[0]
