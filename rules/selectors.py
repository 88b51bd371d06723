"""Reads on configs and versions."""

from .models import Config, ConfigVersion


def configs_for(workspace):
    return Config.objects.filter(workspace=workspace)


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


def hitl_state(*, workspace, version: ConfigVersion | None) -> str:
    """active only on Pro/Enterprise with at least one enabled rule in the served version."""
    if version is not None and workspace.hitl_available and version.enabled_rules:
        return "active"
    return "inert"


LOG_LINES = {
    "active": "HITL: ACTIVE — config approval rules gate the served turn",
    "inert": "HITL: inert (Free plan or no enabled rules)",
}


def rules_diff(previous: list[dict] | None, current: list[dict]) -> dict[str, list[dict]]:
    """What changed between two frozen rule sets, by rule id: added, removed, changed."""
    before = {rule["id"]: rule for rule in previous or []}
    after = {rule["id"]: rule for rule in current}
    return {
        "added": [after[i] for i in after if i not in before],
        "removed": [before[i] for i in before if i not in after],
        "changed": [after[i] for i in after if i in before and before[i] != after[i]],
    }
