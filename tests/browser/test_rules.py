"""The admin's Rules tab in Chromium: a missing selector, publish, roll back; reviewers read only; Free explains."""

from playwright.sync_api import expect

from tests.helpers import change_draft, make_config, make_member, make_rule, make_workspace, publish

from .conftest import login

MISSING_WORKER = "A worker rule needs its match selector: fill in Which one, or pick Any (*)"


def test_it_lets_an_admin_fix_a_worker_rule_publish_and_roll_back(page, acme, alice):
    config = make_config(acme)
    make_rule(config, message="Deletes need a second pair of eyes")
    publish(config, user=alice, note="Gate deletes")
    login(page, "alice@acme.test")
    page.goto(f"/hitl/configs/{config.public_id}/rules/")
    expect(page.locator("#served-state")).to_contain_text("Serving v1")

    page.click("#add-rule")
    page.wait_for_url("**/rules/add/")  # loaded: htmx (deferred) listens for the kind's change from here on
    expect(page.locator("#id_which_legend")).to_have_text("Which delete operation")
    page.select_option("#id_kind", "worker")
    expect(page.locator("#id_which_legend")).to_have_text("Which worker")
    expect(page.locator("#id_match_helptext")).to_have_text(
        "The call's target: the worker or sub-agent's name, such as researcher, or Any."
    )
    page.fill("#id_match", "r")  # typing a selector picks "This one"
    expect(page.locator('input[name="which"][value="one"]')).to_be_checked()
    page.fill("#id_match", "")
    page.click("text=Save rule")
    expect(page.locator("#id_match_error")).to_have_text(MISSING_WORKER)

    page.fill("#id_match", "researcher")
    page.click("text=Save rule")
    expect(page.locator("#rules")).to_contain_text("researcher")
    expect(page.locator("#served-state")).to_contain_text("draft has unpublished changes")

    page.fill("#id_note", "Gate the researcher worker")
    page.click("#publish-button")
    expect(page.locator("#served-state")).to_contain_text("Serving v2")
    expect(page.locator("tr[data-version='2']")).to_contain_text("+ worker researcher")
    expect(page.locator("tr[data-version='2'] .served-marker")).to_be_visible()
    expect(page.locator("#served-state")).to_contain_text("draft matches v2")

    # Disabling swaps the rules card and the served state in place.
    page.locator("#rules tr", has_text="researcher").get_by_role("button", name="Disable").click()
    expect(page.locator("#rules tr", has_text="researcher")).to_contain_text("disabled")
    expect(page.locator("#served-state")).to_contain_text("draft has unpublished changes")

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("text=Roll back to v1")
    expect(page.locator("#served-state")).to_contain_text("Serving v1")
    expect(page.locator("tr[data-version='1'] .served-marker")).to_be_visible()
    config.refresh_from_db()
    assert config.pinned_version == 1


def test_it_keeps_the_roll_back_when_the_admin_dismisses_the_dialog(page, acme, alice):
    config = make_config(acme)
    publish(config, user=alice)
    change_draft(config)
    publish(config, user=alice)
    login(page, "alice@acme.test")
    page.goto(f"/hitl/configs/{config.public_id}/rules/")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("text=Roll back to v1")
    expect(page.locator("#served-state")).to_contain_text("Serving v2")
    config.refresh_from_db()
    assert config.pinned_version is None


def test_it_shows_a_reviewer_the_tabs_read_only(page, acme, alice, bob):
    config = make_config(acme)
    make_rule(config, kind="worker", match="researcher")
    publish(config, user=alice)
    change_draft(config)
    publish(config, user=alice)
    login(page, "bob@acme.test")
    page.goto(f"/hitl/configs/{config.public_id}/rules/")
    expect(page.locator(".tabs")).to_be_visible()
    expect(page.locator("#rules")).to_contain_text("researcher")
    expect(page.locator("#served-state")).to_contain_text("Serving v2")
    for control in ("#add-rule", "#publish-button", "button:has-text('Roll back')", "a:has-text('Edit')"):
        expect(page.locator(control)).to_have_count(0)
    for button in ("Delete", "Disable", "Save rule"):
        expect(page.get_by_role("button", name=button)).to_have_count(0)

    page.click(".tabs >> text=Contacts")
    expect(page.locator("h2", has_text="Contacts in the draft")).to_be_visible()
    expect(page.get_by_role("button", name="Add contact")).to_have_count(0)


def test_it_explains_hitl_above_the_tabs_on_the_free_plan(page, db):
    hobby = make_workspace("hobby", plan="free")
    make_member(hobby, "dora@hobby.test", "admin")
    config = make_config(hobby)
    make_rule(config)
    login(page, "dora@hobby.test")
    page.goto(f"/hitl/configs/{config.public_id}/rules/")
    expect(page.locator("#free-plan")).to_contain_text("Human-in-the-Loop is a Pro and Enterprise feature")
    page.click(".tabs >> text=Contacts")  # reachable on Free too, not only by URL
    expect(page).to_have_url(f"/hitl/configs/{config.public_id}/contacts/")
    page.click(".tabs >> text=Rules")

    page.fill("#id_note", "Gate deletes")
    page.click("#publish-button")
    expect(page.locator("#id_note")).to_have_value("Gate deletes")  # a refused publish keeps the note
    expect(page.locator(".flash-error")).to_contain_text("Disable it to publish on the Free plan")
    page.get_by_role("button", name="Disable").click()
    expect(page.locator("#rules")).to_contain_text("disabled")
    page.click("#publish-button")
    expect(page.locator("#served-state")).to_contain_text("Serving v1")
