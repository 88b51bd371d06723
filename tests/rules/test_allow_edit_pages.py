"""allow_edit in the rule editor, on the Rules tab, version pages and the versions diff."""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from rules.vocabulary import EDIT_NEEDS_FULL, EDIT_NEEDS_ONE_APPROVAL

from ..helpers import make_config, make_rule, publish

FORM = {"kind": "delete", "which": "any", "match": "", "point": "entry", "enabled": "on", "order": 10}


@pytest.fixture
def admin(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def test_the_rule_editor_allows_edits_only_with_one_approval_and_level_full(admin, acme):
    rule = make_rule(make_config(acme, pass_information_level="summary"))
    url = reverse("rules:rule_edit", args=[rule.config.public_id, rule.public_id])
    assert 'name="allow_edit"' in admin.get(url).content.decode()

    summary = admin.post(url, {**FORM, "approvals_required": 1, "allow_edit": "on"})
    assert summary.status_code == 400
    assert f'id="id_allow_edit_error" role="alert">{escape(EDIT_NEEDS_FULL)}</p>' in summary.content.decode()

    rule.config.pass_information_level = "full"
    rule.config.save()
    quorum = admin.post(url, {**FORM, "approvals_required": 2, "allow_edit": "on"})
    assert quorum.status_code == 400
    assert escape(EDIT_NEEDS_ONE_APPROVAL) in quorum.content.decode()

    assert admin.post(url, {**FORM, "approvals_required": 1, "allow_edit": "on"}).status_code == 302
    rule.refresh_from_db()
    assert rule.allow_edit is True
    tab = admin.get(reverse("rules:rules", args=[rule.config.public_id])).content.decode()
    assert 'class="policy">1 approval · four eyes · edits allowed<' in tab


def test_version_pages_and_the_diff_show_edits_allowed(admin, acme, alice):
    config = make_config(acme, pass_information_level="full")
    rule = make_rule(config)
    publish(config, alice)
    rule.allow_edit = True
    rule.save()
    publish(config, alice)
    tab = admin.get(reverse("rules:rules", args=[config.public_id])).content.decode()
    assert "~ delete * (entry) — 1 approval · four eyes · edits allowed" in tab
    v2 = admin.get(reverse("rules:version", args=[config.public_id, 2])).content.decode()
    assert '<td class="policy">1 approval · four eyes · edits allowed</td>' in v2
