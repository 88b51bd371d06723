"""The approver policy on rules: API fields, the editor, the Rules tab, versions and their diff."""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape

from rules.models import ConfigVersion, Rule
from rules.vocabulary import NO_GRANT_WITH_QUORUM

from ..helpers import error_of, make_config, make_rule, publish


@pytest.fixture
def admin(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def rules_url(config) -> str:
    return f"/api/v1/configs/{config.public_id}/rules"


def test_it_gives_a_new_rule_one_approval_four_eyes_and_no_grants(alice_api, acme):
    config = make_config(acme)
    body = alice_api.post(rules_url(config), json={}).json()
    assert (body["approvals_required"], body["self_approval"], body["allow_run_grant"]) == (1, False, False)


def test_it_stores_and_freezes_the_policy_of_a_rule(alice_api, acme, alice):
    config = make_config(acme)
    created = alice_api.post(
        rules_url(config), json={"kind": "delete", "match": "*", "approvals_required": 3, "self_approval": True}
    )
    assert created.status_code == 201, created.text
    assert created.json()["approvals_required"] == 3 and created.json()["self_approval"] is True
    rule = Rule.objects.get()
    assert (rule.approvals_required, rule.self_approval, rule.allow_run_grant) == (3, True, False)

    published = alice_api.post(f"/api/v1/configs/{config.public_id}/publish", json={}).json()
    frozen = published["rules"][0]
    assert (frozen["approvals_required"], frozen["self_approval"], frozen["allow_run_grant"]) == (3, True, False)
    version = alice_api.get(f"/api/v1/configs/{config.public_id}/versions/1").json()
    assert version["rules"][0]["approvals_required"] == 3


@pytest.mark.parametrize(
    "body, field",
    [
        ({"approvals_required": 0}, "approvals_required"),
        ({"approvals_required": 6}, "approvals_required"),
        ({"approvals_required": "many"}, "approvals_required"),
        ({"self_approval": "perhaps"}, "self_approval"),
        ({"approvals_required": 2, "allow_run_grant": True}, "allow_run_grant"),
    ],
)
def test_it_refuses_a_policy_out_of_range_naming_the_field(alice_api, acme, body, field):
    config = make_config(acme)
    response = alice_api.post(rules_url(config), json={"kind": "delete", "match": "*", **body})
    assert response.status_code == 400, response.text
    assert field in error_of(response)["fields"]
    assert not Rule.objects.exists()


def test_it_refuses_a_run_grant_on_a_rule_that_already_needs_a_quorum(alice_api, acme):
    rule = make_rule(make_config(acme), approvals_required=2)
    response = alice_api.patch(f"{rules_url(rule.config)}/{rule.public_id}", json={"allow_run_grant": True})
    assert response.status_code == 400
    assert error_of(response)["fields"] == {"allow_run_grant": NO_GRANT_WITH_QUORUM}
    rule.refresh_from_db()
    assert rule.allow_run_grant is False


def test_it_reads_versions_published_before_the_policy_as_its_defaults(alice_api, acme, alice):
    config = make_config(acme)
    rule = make_rule(config)
    old = {
        key: value
        for key, value in rule.frozen().items()
        if key not in ("approvals_required", "self_approval", "allow_run_grant")
    }
    ConfigVersion.objects.create(
        config=config,
        number=1,
        published_at=timezone.now(),
        rules=[old],
        token_caps=config.token_caps,
        pass_information_level=config.pass_information_level,
    )
    body = alice_api.get(f"/api/v1/configs/{config.public_id}/versions/1").json()
    assert body["rules"][0]["approvals_required"] == 1 and body["rules"][0]["allow_run_grant"] is False
    # …and the draft, which has the same rule with the default policy, does not read as changed.
    page = Client()
    page.force_login(alice)
    html = page.get(reverse("rules:rules", args=[config.public_id])).content.decode()
    assert "draft matches v1" in html


def test_it_edits_the_policy_in_the_rule_editor_and_shows_it_on_the_rules_tab(admin, acme):
    rule = make_rule(make_config(acme))
    url = reverse("rules:rule_edit", args=[rule.config.public_id, rule.public_id])
    form = admin.get(url).content.decode()
    assert 'name="approvals_required"' in form and 'name="allow_run_grant"' in form
    data = {"kind": "delete", "which": "any", "match": "", "point": "entry", "enabled": "on", "order": 10}
    refused = admin.post(url, {**data, "approvals_required": 2, "allow_run_grant": "on"})
    assert refused.status_code == 400
    assert f'id="id_allow_run_grant_error" role="alert">{escape(NO_GRANT_WITH_QUORUM)}</p>' in refused.content.decode()
    assert admin.post(url, {**data, "approvals_required": 2}).status_code == 302
    rule.refresh_from_db()
    assert (rule.approvals_required, rule.self_approval, rule.allow_run_grant) == (2, False, False)
    tab = admin.get(reverse("rules:rules", args=[rule.config.public_id])).content.decode()
    assert '<dd class="policy">2 approvals · four eyes' in tab  # under the rule's Details


def test_it_shows_policy_changes_on_version_pages_and_in_the_versions_diff(admin, acme, alice):
    config = make_config(acme)
    rule = make_rule(config)
    publish(config, alice)
    rule.self_approval, rule.allow_run_grant = True, True
    rule.save()
    publish(config, alice)
    tab = admin.get(reverse("rules:rules", args=[config.public_id])).content.decode()
    assert "~ delete * (entry) — 1 approval · requester may approve · run grants" in tab
    assert "approvers were: 1 approval · four eyes" in tab
    v2 = admin.get(reverse("rules:version", args=[config.public_id, 2])).content.decode()
    assert '<td class="policy">1 approval · requester may approve · run grants</td>' in v2
    v1 = admin.get(reverse("rules:version", args=[config.public_id, 1])).content.decode()
    assert '<td class="policy">1 approval · four eyes</td>' in v1
