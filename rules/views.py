"""The admin's pages: configs, the Rules tab, settings (token caps), publish, pin, frozen versions.

Every member may read them; only admins get edit controls, and the server refuses anyone else's
POST (`admin_required`). A config of another workspace answers 404, like a missing one.
"""

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from workspaces.decorators import admin_required, member_required

from . import selectors, services
from .exceptions import NothingToPublish, PlanRequired
from .forms import (
    MATCH_HINT_ID,
    ConfigForm,
    PinForm,
    PublishForm,
    RuleFilterForm,
    RuleForm,
    SettingsForm,
    which_one_for,
)
from .models import Config, ConfigVersion, Rule
from .policy_views import editor_context, policy_context

# The Rules tab lists the newest versions; the rest are a link away (?versions=all).
VERSIONS_SHOWN = 10


def config_page_context(request: HttpRequest, config: Config, tab: str, configs: list[Config] | None = None) -> dict:
    """What every per-config page shows at the top: the picker and the served state."""
    configs = list(selectors.configs_with_versions(request.actor.workspace)) if configs is None else configs
    rules = list(config.rules.all())
    contacts = list(config.contacts.all())
    versions = list(config.versions.select_related("published_by"))
    served = next((v for v in versions if v.number == config.served_number), None)
    draft_changed, draft_words = selectors.draft_state(
        selectors.draft_frozen(config, rules, contacts), versions, config.served_number
    )
    return {
        "tab": tab,
        "config": config,
        "configs": configs,
        "rules": rules,
        "contacts": contacts,
        "versions": versions,
        "served": served,
        "pinned": config.pinned_version is not None,
        "draft_changed": draft_changed,
        "draft_words": draft_words,
        "can_edit": request.actor.is_admin,
    }


@member_required
@require_http_methods(["GET", "POST"])
def configs(request: HttpRequest) -> HttpResponse:
    workspace = request.actor.workspace
    form = ConfigForm()
    if request.method == "POST":
        if not request.actor.is_admin:
            raise PermissionDenied("Only a workspace admin may change this.")
        form = ConfigForm(request.POST)
        if form.is_valid():
            config = services.config_create(workspace=workspace, name=form.cleaned_data["name"], user=request.user)
            messages.success(request, f"Created {config.name}. Add its rules, then publish.")
            return redirect("rules:rules", config.public_id)
    rows = []
    for config in selectors.configs_with_versions(workspace).prefetch_related("rules", "contacts", "versions"):
        draft = selectors.draft_frozen(config, config.rules.all(), config.contacts.all())
        changed, words = selectors.draft_state(draft, list(config.versions.all()), config.served_number)
        row = {"config": config, "draft_changed": changed, "draft_words": words}
        if request.actor.is_admin:
            row["rename_form"] = ConfigForm.rename(config)
        rows.append(row)
    context = {"tab": "rules", "rows": rows, "form": form, "can_edit": request.actor.is_admin}
    return render(request, "rules/configs.html", context, status=400 if form.errors else 200)


@admin_required
@require_POST
def config_rename(request: HttpRequest, cfg: str) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    form = ConfigForm(request.POST, instance=config)
    if form.is_valid():
        services.config_update(config=config, name=form.cleaned_data["name"], user=request.user)
        messages.success(request, f"Renamed to {config.name}.")
    else:
        messages.error(request, "A config needs a name of at most 200 characters.")
    return redirect("rules:configs")


@member_required
def rules(request: HttpRequest, cfg: str) -> HttpResponse:
    return _rules_page(request, cfg)


def _rules_page(
    request: HttpRequest, cfg: str, *, publish_form: PublishForm | None = None, status: int = 200
) -> HttpResponse:
    """The Rules tab; after a refused publish, with the typed note still in its box."""
    configs = list(selectors.configs_with_versions(request.actor.workspace))
    config = next((c for c in configs if c.public_id == cfg), None)
    if config is None:
        raise Http404("No such config in this workspace.")
    context = config_page_context(request, config, "rules", configs)
    versions = context["versions"]
    filter_form = RuleFilterForm(request.GET or None)
    context["filter_form"] = filter_form
    context["filtering"] = any(name in request.GET for name in filter_form.fields)
    context["shown_rules"] = (
        selectors.rules_matching(context["rules"], **filter_form.filters()) if request.GET else context["rules"]
    )
    all_versions = request.GET.get("versions") == "all"
    context["more_versions"] = 0 if all_versions else max(len(versions) - VERSIONS_SHOWN, 0)
    # Versions are newest first, so each one's predecessor is the next in the list.
    context["version_rows"] = []
    for i, version in enumerate(versions if all_versions else versions[:VERSIONS_SHOWN]):
        previous = versions[i + 1] if i + 1 < len(versions) else None
        diff = selectors.rules_diff(previous.rules if previous else None, version.rules)
        for rule in diff["added"] + diff["changed"]:
            rule["who"] = selectors.notify_summary(rule, version.contacts)
        contacts = selectors.rules_diff(previous.contacts if previous else None, version.contacts)
        changes = selectors.settings_changes(previous, version)
        row = {"version": version, "diff": diff, "contacts": contacts, "settings": changes}
        row["changes"] = sum(map(len, [*diff.values(), *contacts.values(), changes]))
        row["unchanged"] = not row["changes"]
        context["version_rows"].append(row)
    context["publish_form"] = publish_form or PublishForm()
    context["next_number"] = (config.latest_version or 0) + 1
    # Versions are newest first: a draft equal to the newest has nothing to publish, and the button says so.
    draft = selectors.draft_frozen(config, context["rules"], context["contacts"])
    context["nothing_to_publish"] = selectors.nothing_to_publish(
        draft, versions[0] if versions else None, config.pinned_version
    )
    context.update(policy_context(config, context["rules"]))
    return render(request, "rules/rules.html", context, status=status)


@admin_required
@require_http_methods(["GET", "POST"])
def rule_add(request: HttpRequest, cfg: str) -> HttpResponse:
    """A new rule's form, prefilled with "approve every delete"; nothing is in the draft until it is saved."""
    return _rule_editor(request, cfg, rul=None)


@admin_required
@require_http_methods(["GET", "POST"])
def rule_edit(request: HttpRequest, cfg: str, rul: str) -> HttpResponse:
    return _rule_editor(request, cfg, rul=rul)


def _rule_editor(request: HttpRequest, cfg: str, *, rul: str | None) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    rule = Rule(config=config) if rul is None else selectors.rule_for(config=config, public_id=rul)
    form = RuleForm(request.POST if request.method == "POST" else None, instance=rule)
    if form.is_bound and form.is_valid():
        changes = {k: v for k, v in form.cleaned_data.items() if k != "which"}
        if rul is None:
            services.rule_create(config=config, user=request.user, **changes)
            messages.success(request, "Added the rule to the draft. Publish to serve it.")
        else:
            services.rule_update(rule=form.instance, user=request.user, **changes)
            messages.success(request, "Saved the rule in the draft. Publish to serve it.")
        return redirect("rules:rules", config.public_id)
    context = config_page_context(request, config, "rules")
    context.update(form=form, rule=None if rul is None else rule)
    context.update(editor_context(form["condition"].value() or ""))
    return render(request, "rules/rule_edit.html", context, status=400 if form.errors else 200)


@admin_required
@require_GET
def which_one(request: HttpRequest) -> HttpResponse:
    """The "Which one" legend and the selector's hint for the kind the rule form's select now shows (htmx)."""
    legend, hint = which_one_for(request.GET.get("kind", ""))
    return render(request, "rules/_which_one.html", {"legend": legend, "hint": hint, "hint_id": MATCH_HINT_ID})


@admin_required
@require_POST
def rule_toggle(request: HttpRequest, cfg: str, rul: str) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    rule = selectors.rule_for(config=config, public_id=rul)
    services.rule_update(rule=rule, enabled=not rule.enabled, user=request.user)
    messages.success(request, f"{'Enabled' if rule.enabled else 'Disabled'} the rule in the draft.")
    return redirect("rules:rules", config.public_id)


@admin_required
@require_POST
def rule_delete(request: HttpRequest, cfg: str, rul: str) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    services.rule_delete(rule=selectors.rule_for(config=config, public_id=rul), user=request.user)
    messages.success(request, "Deleted the rule from the draft. Published versions keep it.")
    return redirect("rules:rules", config.public_id)


@member_required
@require_http_methods(["GET", "POST"])
def config_settings(request: HttpRequest, cfg: str) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    form = SettingsForm(instance=config, read_only=not request.actor.is_admin)
    if request.method == "POST":
        if not request.actor.is_admin:
            raise PermissionDenied("Only a workspace admin may change this.")
        form = SettingsForm(request.POST, instance=config)
        if form.is_valid():
            services.config_update(config=form.instance, user=request.user, **form.cleaned_data)
            messages.success(request, "Saved the draft's settings. Publish to serve them.")
            return redirect("rules:settings", config.public_id)
        config.refresh_from_db()
    context = config_page_context(request, config, "rules")
    context["form"] = form
    return render(request, "rules/settings.html", context, status=400 if form.errors else 200)


@admin_required
@require_POST
def publish(request: HttpRequest, cfg: str) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    form = PublishForm(request.POST)
    if not form.is_valid():  # the note's error shows next to it
        return _rules_page(request, cfg, publish_form=form, status=400)
    try:
        version = services.config_publish(config=config, user=request.user, note=form.cleaned_data["note"])
    except (PlanRequired, NothingToPublish) as refusal:
        # The page again, not a redirect: the note the admin typed stays in its box.
        messages.error(request, refusal.message)
        return _rules_page(request, cfg, publish_form=form, status=403 if isinstance(refusal, PlanRequired) else 409)
    messages.success(request, f"Published v{version.number}; it is served now.")
    return redirect("rules:rules", config.public_id)


@admin_required
@require_POST
def pin(request: HttpRequest, cfg: str) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    form = PinForm(request.POST)
    if not form.is_valid():
        raise Http404("No such version.")
    try:
        version = services.config_pin(config=config, version=form.cleaned_data["version"], user=request.user)
    except ConfigVersion.DoesNotExist:
        raise Http404("No such version of this config.") from None
    messages.success(request, f"Serving v{version.number} until the next publish.")
    return redirect("rules:rules", config.public_id)


@member_required
def version(request: HttpRequest, cfg: str, number: int) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    frozen = config.versions.select_related("published_by").filter(number=number).first()
    if frozen is None:
        raise Http404("No such version of this config.")
    context = config_page_context(request, config, "rules")
    rules = [{**rule, "who": selectors.notify_summary(rule, frozen.contacts)} for rule in frozen.rules]
    context.update(
        frozen=frozen, rules=rules, contacts=frozen.contacts, is_served=frozen.number == config.served_number
    )
    return render(request, "rules/version.html", context)
