"""The admin's pages: form messages next to the field, publish, pin, Free plan, constant query counts."""

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from rules import services as rule_services
from rules.models import ConfigVersion, Rule
from rules.selectors import served_number

from ..helpers import make_config, make_member, make_rule, make_workspace, publish
from .test_api import MISSING_MATCH, NEVER_A_TOOL, TOOL_SPELLINGS


@pytest.fixture
def admin(alice) -> Client:
    client = Client()
    client.force_login(alice)
    return client


def _edit(admin, rule, **fields):
    data = {"kind": "delete", "which": "one", "match": "", "point": "entry", "enabled": "on", "order": 10}
    data.update(fields)
    return admin.post(reverse("rules:rule_edit", args=[rule.config.public_id, rule.public_id]), data)


def test_add_rule_opens_approve_every_delete_and_adds_it_only_when_saved(admin, acme):
    config = make_config(acme)
    url = reverse("rules:rule_add", args=[config.public_id])

    page = admin.get(url).content.decode()
    assert "New rule" in page and "Which delete operation" in page
    assert 'value="any" checked' in page.replace('id="id_which_0" ', "").replace("required ", "")
    assert not Rule.objects.exists()  # Cancel (a link back) leaves the draft as it was

    response = admin.post(url, {"kind": "delete", "which": "any", "point": "entry", "enabled": "on", "order": 10})
    rule = Rule.objects.get()
    assert (rule.kind, rule.match, rule.point, rule.enabled, rule.order) == ("delete", "*", "entry", True, 10)
    assert response["Location"] == reverse("rules:rules", args=[config.public_id])


def test_an_invalid_new_rule_is_not_added(admin, acme):
    config = make_config(acme)

    response = admin.post(
        reverse("rules:rule_add", args=[config.public_id]), {"kind": "worker", "which": "one", "match": "", "order": 1}
    )

    assert response.status_code == 400
    assert "A worker rule needs its match selector" in response.content.decode()
    assert not Rule.objects.exists()


def test_publishing_an_unchanged_draft_is_refused_and_keeps_the_note(admin, acme, alice):
    config = make_config(acme)
    make_rule(config)
    publish(config, alice)

    response = admin.post(reverse("rules:publish", args=[config.public_id]), {"note": "Same again, typed with care"})

    html = response.content.decode()
    assert response.status_code == 409
    assert "The draft matches v1: there is nothing new to publish." in html
    assert 'value="Same again, typed with care"' in html
    assert ConfigVersion.objects.filter(config=config).count() == 1


@pytest.mark.parametrize("kind", list(MISSING_MATCH))
def test_it_shows_the_missing_selector_message_next_to_the_field(admin, acme, kind):
    rule = make_rule(make_config(acme))
    response = _edit(admin, rule, kind=kind, which="one", match="")
    assert response.status_code == 400
    html = response.content.decode()
    assert f'<p class="error" id="id_match_error" role="alert">{MISSING_MATCH[kind]}</p>' in html
    rule.refresh_from_db()
    assert (rule.kind, rule.match) == ("delete", "*")


@pytest.mark.parametrize("tool", TOOL_SPELLINGS)
def test_it_refuses_a_tool_as_mcp_server_in_the_form(admin, acme, tool):
    rule = make_rule(make_config(acme))
    response = _edit(admin, rule, kind="mcp_server", match=tool)
    assert response.status_code == 400
    assert f'id="id_match_error" role="alert">{NEVER_A_TOOL}</p>' in response.content.decode()
    assert "Which MCP server (mcp_…)" in response.content.decode()


def test_it_saves_a_selector_or_any(admin, acme):
    rule = make_rule(make_config(acme))
    assert _edit(admin, rule, kind="mcp_server", match="mcp_billing", point="exit", message="Money").status_code == 302
    rule.refresh_from_db()
    assert (rule.kind, rule.match, rule.point, rule.message) == ("mcp_server", "mcp_billing", "exit", "Money")
    assert _edit(admin, rule, kind="worker", which="any", match="ignored").status_code == 302
    rule.refresh_from_db()
    assert (rule.kind, rule.match, rule.enabled) == ("worker", "*", True)


def test_it_enables_disables_and_deletes_a_rule(admin, acme):
    config = make_config(acme)
    rule = make_rule(config)
    admin.post(reverse("rules:rule_toggle", args=[config.public_id, rule.public_id]))
    rule.refresh_from_db()
    assert rule.enabled is False
    assert "Enable</button>" in admin.get(reverse("rules:rules", args=[config.public_id])).content.decode()
    admin.post(reverse("rules:rule_delete", args=[config.public_id, rule.public_id]))
    assert not Rule.objects.exists()


def test_it_shows_draft_and_served_state_and_publishes_with_a_note(admin, acme):
    config = make_config(acme)
    url = reverse("rules:rules", args=[config.public_id])
    assert "Not published yet" in admin.get(url).content.decode()
    make_rule(config)
    admin.post(reverse("rules:publish", args=[config.public_id]), {"note": "Gate deletes"})
    version = ConfigVersion.objects.get()
    assert (version.number, version.note, version.published_by.email) == (1, "Gate deletes", "alice@acme.test")
    html = admin.get(url).content.decode()
    assert "Serving v1" in html and "draft matches v1" in html and "Published v1; it is served now." in html
    assert "+ delete * (entry)" in html

    make_rule(config, kind="worker", match="researcher")
    assert "draft has unpublished changes" in admin.get(url).content.decode()


def test_it_rolls_back_by_pinning_an_older_version(admin, acme):
    config = make_config(acme)
    make_rule(config)
    publish(config)
    make_rule(config, kind="cell", match="*")
    publish(config)
    url = reverse("rules:rules", args=[config.public_id])
    html = admin.get(url).content.decode()
    assert "Roll back to v1" in html and 'data-confirm="Serve v1 instead of v2?' in html

    admin.post(reverse("rules:pin", args=[config.public_id]), {"version": 1})
    config.refresh_from_db()
    assert served_number(config) == 1
    html = admin.get(url).content.decode()
    assert "Serving v1" in html and "pinned; newest is v2" in html and "Pin v2" in html
    assert admin.post(reverse("rules:pin", args=[config.public_id]), {"version": 9}).status_code == 404


def test_it_explains_hitl_and_refuses_an_enabled_rule_on_the_free_plan(acme):
    hobby = make_workspace("hobby", plan="free")
    client = Client()
    client.force_login(make_member(hobby, "dora@hobby.test", "admin"))
    config = make_config(hobby)
    rule = make_rule(config)
    url = reverse("rules:rules", args=[config.public_id])
    html = client.get(url).content.decode()
    assert 'id="free-plan"' in html and 'class="tabs"' in html
    assert reverse("contacts:contacts", args=[config.public_id]) in html  # the Contacts tab is reachable on Free

    response = client.post(reverse("rules:publish", args=[config.public_id]), {"note": "My first gate"})
    assert response.status_code == 403
    assert "Human-in-the-Loop needs a Pro or Enterprise plan" in response.content.decode()
    assert 'value="My first gate"' in response.content.decode()  # the typed note is kept
    assert not ConfigVersion.objects.exists()

    client.post(reverse("rules:rule_toggle", args=[config.public_id, rule.public_id]))
    client.post(reverse("rules:publish", args=[config.public_id]))
    assert ConfigVersion.objects.get().rules[0]["enabled"] is False


def test_it_saves_token_caps_on_the_settings_page(admin, acme):
    config = make_config(acme)
    url = reverse("rules:settings", args=[config.public_id])
    assert 'id="token-caps"' in admin.get(url).content.decode()
    data = {"name": "Support", "pass_information_level": "full", "token_cap_per_turn": "0", "token_cap_mode": "stop"}
    refused = admin.post(url, data)
    assert refused.status_code == 400 and "greater than or equal to 1" in refused.content.decode()
    data["token_cap_per_turn"] = "40000"
    assert admin.post(url, data).status_code == 302
    config.refresh_from_db()
    assert config.token_caps == {"per_turn": 40000, "mode": "stop"} and config.pass_information_level == "full"


def test_it_shows_a_frozen_version_read_only(admin, acme):
    config = make_config(acme, token_cap_per_turn=900)
    make_rule(config, kind="worker", match="researcher", message="Costs money")
    publish(config, note="First")
    html = admin.get(reverse("rules:version", args=[config.public_id, 1])).content.decode()
    assert f"{config.public_id}@1" in html and "researcher" in html and "Costs money" in html
    assert "900 tokens per turn" in html and "First" in html and "served" in html
    assert admin.get(reverse("rules:version", args=[config.public_id, 2])).status_code == 404


def test_it_creates_and_renames_configs_and_switches_between_them(admin, acme):
    admin.post(reverse("rules:configs"), {"name": "Support agent"})
    admin.post(reverse("rules:configs"), {"name": "Data notebook"})
    from rules.models import Config

    support = Config.objects.get(name="Support agent")
    notebook = Config.objects.get(name="Data notebook")
    admin.post(reverse("rules:config_rename", args=[notebook.public_id]), {"name": "Warehouse notebook"})
    notebook.refresh_from_db()
    assert notebook.name == "Warehouse notebook"
    html = admin.get(reverse("rules:rules", args=[support.public_id])).content.decode()
    assert f'value="{reverse("rules:rules", args=[notebook.public_id])}"' in html
    assert admin.post(reverse("rules:configs"), {"name": ""}).status_code == 400


def _queries(client, url) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return len(queries)


def test_it_runs_a_constant_number_of_queries_on_the_rules_tab_and_configs_list(admin, acme, alice):
    config = make_config(acme)
    for i in range(2):
        make_rule(config, kind="worker", match=f"w{i}")
        make_config(acme, name=f"Other {i}")
        publish(config, user=alice)
    rules_url = reverse("rules:rules", args=[config.public_id])
    few = (_queries(admin, rules_url), _queries(admin, reverse("rules:configs")))
    for i in range(2, 30):
        make_rule(config, kind="worker", match=f"w{i}")
        make_config(acme, name=f"Other {i}")
        publish(config, user=alice)
    many = (_queries(admin, rules_url), _queries(admin, reverse("rules:configs")))
    assert many == few


def test_it_swaps_the_which_one_hint_from_the_servers_table_without_inline_script(admin, acme):
    config = make_config(acme)
    rule = make_rule(config)
    page = admin.get(reverse("rules:rule_edit", args=[config.public_id, rule.public_id])).content.decode()
    assert page.count("<script") == page.count("<script src=") and "onchange" not in page
    assert f'hx-get="{reverse("rules:which_one")}"' in page
    hint = admin.get(reverse("rules:which_one"), {"kind": "cell"}, headers={"HX-Request": "true"}).content.decode()
    assert '<legend id="id_which_legend">Which delete operation</legend>' in page  # the target, and the swap:
    assert hint.strip().startswith("Which cell<span")
    hint_text = "The call&#x27;s target: a notebook or cell id, such as nb_warehouse, or Any."
    assert f'<span id="id_match_helptext" hx-swap-oob="innerHTML">{hint_text}</span>' in hint


def test_the_delete_hint_says_its_match_is_the_operation_on_any_target(admin, acme):
    # As the served gates' match_field says, and the portal and every client apply (docs/engines.md).
    hint = admin.get(reverse("rules:which_one"), {"kind": "delete"}, headers={"HX-Request": "true"}).content.decode()

    assert "such as delete_file or drop_table: the rule gates that operation on any target" in hint


def test_publish_is_disabled_and_says_why_while_the_draft_matches_the_newest_version(admin, acme, alice):
    config = make_config(acme)
    rule = make_rule(config)
    publish(config, alice)
    tab = reverse("rules:rules", args=[config.public_id])

    html = admin.get(tab).content.decode()

    button = html[html.index('id="publish-button"') :][:120]
    assert "disabled" in button and 'aria-describedby="publish-why"' in button
    assert "The draft matches v1: there is nothing new to publish." in html[html.index('id="publish-why"') :][:200]

    rule_services.rule_update(rule=rule, message="Changed")
    html = admin.get(tab).content.decode()
    assert "disabled" not in html[html.index('id="publish-button"') :][:120]
    assert 'id="publish-why"' not in html


def test_publish_says_to_pin_when_an_older_version_is_served(admin, acme, alice):
    config = make_config(acme)
    rule = make_rule(config)
    publish(config, alice)
    rule_services.rule_update(rule=rule, message="Second")
    publish(config, alice)
    rule_services.config_pin(config=config, version=1, user=alice)

    html = admin.get(reverse("rules:rules", args=[config.public_id])).content.decode()

    assert "pin v2 to serve it instead of v1" in html[html.index('id="publish-why"') :][:300]


def test_after_a_rollback_the_header_and_the_configs_list_agree_with_the_publish_card(admin, acme, alice):
    config = make_config(acme)
    rule = make_rule(config)
    publish(config, alice)
    rule_services.rule_update(rule=rule, message="Second")
    publish(config, alice)
    rule_services.config_pin(config=config, version=1, user=alice)  # rolled back: v1 served, the draft is v2's

    tab = admin.get(reverse("rules:rules", args=[config.public_id])).content.decode()
    listing = admin.get(reverse("rules:configs")).content.decode()

    state = tab[tab.index('id="served-state"') :][:600]
    assert "unpublished changes" not in state
    assert "draft matches v2, the newest version (v1 is served)" in state
    assert "The draft matches v2: there is nothing new to publish" in tab  # the Publish card, the same fact
    assert "Draft matches v2, the newest version (v1 is served)" in listing and "unpublished" not in listing


def test_a_versions_changes_count_its_contacts_and_settings_not_only_its_rules(admin, acme, alice):
    from contacts.services import contact_create

    config = make_config(acme)
    make_rule(config)
    publish(config, alice)
    for name in ("Leads", "Finance", "Security", "Legal"):
        contact_create(config=config, name=name, channel="email", channel_ref="${HITL_ACME_" + name.upper() + "_EMAIL}")
    publish(config, alice, note="Four contacts")

    html = admin.get(reverse("rules:rules", args=[config.public_id])).content.decode()
    newest = html[html.index('data-version="2"') :]
    newest = newest[: newest.index("</tr>")]

    assert "unchanged" not in newest
    for name in ("Leads", "Finance", "Security", "Legal"):
        assert f"+ contact {name} (email)" in newest
