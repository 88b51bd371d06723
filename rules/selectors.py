"""Reads on configs and versions."""

from collections.abc import Iterable
from typing import TYPE_CHECKING

from django.db.models import QuerySet

from workspaces.models import Workspace

from .exceptions import ConfigNotFound, RuleNotFound
from .models import Config, ConfigVersion, Rule

if TYPE_CHECKING:
    from contacts.models import Contact  # contacts imports rules: a name for the annotation only


def configs_for(workspace: Workspace) -> QuerySet[Config]:
    return Config.objects.filter(workspace=workspace)


def config_for(*, workspace: Workspace, public_id: str) -> Config:
    """One config of this workspace, with `latest_version` and `served_number`; raises ConfigNotFound.

    Another workspace's config reads exactly like a missing one. Pages, API and engines all load it here.
    """
    config = configs_with_versions(workspace).filter(public_id=public_id).first()
    if config is None:
        raise ConfigNotFound()  # the id is not echoed: an outsider learns nothing from a 404
    return config


def rule_for(*, config: Config, public_id: str) -> Rule:
    """One rule of this config's draft; another config's reads as missing. Raises RuleNotFound."""
    rule = Rule.objects.filter(config=config, public_id=public_id).first()
    if rule is None:
        raise RuleNotFound()
    return rule


def served_version(config: Config) -> ConfigVersion | None:
    """The pinned version, else the newest; None before the first publish."""
    versions = ConfigVersion.objects.filter(config=config)
    if config.pinned_version is not None:
        return versions.filter(number=config.pinned_version).first()
    return versions.order_by("-number").first()


def served_number(config: Config) -> int | None:
    if config.pinned_version is not None:
        return config.pinned_version
    return ConfigVersion.objects.filter(config=config).order_by("-number").values_list("number", flat=True).first()


def hitl_state(*, workspace: Workspace, version: ConfigVersion | None) -> str:
    """active only on Pro/Enterprise with at least one enabled rule in the served version."""
    if version is not None and workspace.hitl_available and version.enabled_rules:
        return "active"
    return "inert"


LOG_LINES = {
    "active": "HITL: ACTIVE — config approval rules gate the served turn",
    "inert": "HITL: inert (Free plan or no enabled rules)",
}


def rules_diff(previous: list[dict] | None, current: list[dict]) -> dict[str, list[dict]]:
    """What changed between two frozen rule sets (or contact lists), by id: added, removed, changed (with `before`)."""
    # Copies, so a page may annotate them. Both lists come from loaded versions: complete (from_db).
    before = {rule["id"]: dict(rule) for rule in previous or []}
    after = {rule["id"]: dict(rule) for rule in current}
    return {
        "added": [after[i] for i in after if i not in before],
        "removed": [before[i] for i in before if i not in after],
        "changed": [{**after[i], "before": before[i]} for i in after if i in before and before[i] != after[i]],
    }


def settings_changes(previous: ConfigVersion | None, current: ConfigVersion) -> list[str]:
    """A version's settings that differ from the version before it, in words (none for the first)."""
    if previous is None:
        return []
    changes = []
    if previous.pass_information_level != current.pass_information_level:
        changes.append(f"pass information level {previous.pass_information_level} → {current.pass_information_level}")
    if previous.token_caps != current.token_caps:
        changes.append("token caps changed")
    if list(previous.questions_notify or []) != list(current.questions_notify or []):
        changes.append("who is told of questions and plans changed")
    return changes


def configs_with_versions(workspace: Workspace) -> QuerySet[Config]:
    """Configs annotated with `latest_version` and `served_number` in the same query."""
    from django.db.models import Max
    from django.db.models.functions import Coalesce

    return (
        Config.objects.filter(workspace=workspace)
        .annotate(latest_version=Max("versions__number"))
        .annotate(served_number=Coalesce("pinned_version", "latest_version"))
    )


def draft_frozen(
    config: Config, rules: Iterable[Rule] | None = None, contacts: "Iterable[Contact] | None" = None
) -> dict:
    """The draft as a publish would freeze it (pass prefetched rules/contacts to save queries)."""
    rules = config.rules.all() if rules is None else rules
    contacts = config.contacts.all() if contacts is None else contacts
    return {
        "rules": [rule.frozen() for rule in rules],
        "contacts": [contact.frozen() for contact in contacts],
        "token_caps": config.token_caps,
        "pass_information_level": config.pass_information_level,
        "questions_notify": list(config.questions_notify or []),
    }


def draft_differs(draft: dict, version: ConfigVersion | None) -> bool:
    """Does the draft differ from a version (rules, contacts, token caps, pass information level)?"""
    if version is None:
        return True
    return draft != {
        "rules": version.rules,
        "contacts": version.contacts,
        "token_caps": version.token_caps,
        "pass_information_level": version.pass_information_level,
        "questions_notify": list(version.questions_notify or []),
    }


def draft_state(draft: dict, versions: list[ConfigVersion], served_number: int | None) -> tuple[bool, str]:
    """(does the draft hold unpublished changes, how to say so) — the config bar's and the configs list's words.

    After a rollback the served version is older than the newest: a draft equal to the newest has
    nothing to publish (as the Publish card says), though it differs from what is served.
    """
    by_number = {version.number: version for version in versions}
    served = by_number.get(served_number)
    latest = by_number[max(by_number)] if by_number else None
    if served is not None and not draft_differs(draft, served):
        return False, f"draft matches v{served.number}"
    if latest is not None and latest is not served and not draft_differs(draft, latest):
        return False, f"draft matches v{latest.number}, the newest version (v{served_number} is served)"
    return True, "draft has unpublished changes"


def nothing_to_publish(draft: dict, latest: ConfigVersion | None, served_number: int | None) -> str:
    """Why a publish now would be refused (the draft matches the newest version), or "" when it would not.

    The service refuses with these words and the Rules tab disables its Publish button with them.
    """
    if latest is None or draft_differs(draft, latest):
        return ""
    served = served_number or latest.number
    return (
        f"The draft matches v{latest.number}: there is nothing new to publish. Change a rule, a contact or "
        "a setting first"
        + (f", or pin v{latest.number} to serve it instead of v{served}." if served != latest.number else ".")
    )


def notify_summary(rule: dict, contacts: list[dict]) -> str:
    """Who a frozen rule tells, in words: "notifies Support leads; escalates to Finance after 300 s"."""
    names = {contact["id"]: contact["name"] for contact in contacts}
    parts = []
    if rule.get("notify"):
        parts.append("notifies " + ", ".join(names.get(i, i) for i in rule["notify"]))
    if rule.get("escalate_to"):
        who = ", ".join(names.get(i, i) for i in rule["escalate_to"])
        parts.append(f"escalates to {who} after {rule.get('escalate_after_seconds')} s")
    return "; ".join(parts)


def rules_matching(
    rules: Iterable[Rule], *, q: str = "", kind: str = "", mode: str = "", condition: str = "", enabled: str = ""
) -> list[Rule]:
    """The Rules tab's filters on a config's draft rules: text (in the selector, message, condition or id),
    kind, mode, whether it has a condition, whether it is enabled (`yes`/`no`; empty: either)."""
    words = q.casefold().split()
    found = []
    for rule in rules:
        text = " ".join((rule.match, rule.message, rule.condition, rule.public_id, rule.kind)).casefold()
        if words and not all(word in text for word in words):
            continue
        if (kind and rule.kind != kind) or (mode and rule.mode != mode):
            continue
        if condition and bool(rule.condition) != (condition == "yes"):
            continue
        if enabled and rule.enabled != (enabled == "yes"):
            continue
        found.append(rule)
    return found
