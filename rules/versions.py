"""Published config versions, kept by each process: the one cache of frozen versions.

A published version never changes (a database trigger refuses it), so each process keeps the ones
it has read instead of reading the same row for every registration and every notification. It is
found by what an engine names — (workspace, config public id, number) — or by what a stored
request holds — (config pk, number); both lead to the same kept object. A miss is never kept: a
version published later is found then.
"""

import threading

from django.db.models import Q

from rules.exceptions import ConfigNotFound
from rules.models import Config, ConfigVersion

# Bounded, so a process serving many workspaces does not grow without end; emptied, not evicted.
MAX_KEPT = 4096


class FrozenVersions:
    def __init__(self) -> None:
        self._by_key: dict[tuple[int, int], ConfigVersion] = {}
        self._by_name: dict[tuple[int, str, int], tuple[int, int]] = {}
        self._lock = threading.Lock()

    def _keep(self, version: ConfigVersion) -> None:
        with self._lock:
            if len(self._by_key) >= MAX_KEPT:
                self._by_key.clear()
                self._by_name.clear()
            key = (version.config_id, version.number)
            self._by_key[key] = version
            self._by_name[(version.config.workspace_id, version.config.public_id, version.number)] = key

    def named(self, *, workspace_id: int, config_id: str, number: int) -> ConfigVersion:
        """The version an engine registers against; ConfigNotFound saying what is missing."""
        key = self._by_name.get((workspace_id, config_id, number))
        version = self._by_key.get(key) if key else None
        if version is not None:
            return version
        version = (
            ConfigVersion.objects.select_related("config")
            .filter(config__workspace_id=workspace_id, config__public_id=config_id, number=number)
            .first()
        )
        if version is not None:
            self._keep(version)
            return version
        if not Config.objects.filter(workspace_id=workspace_id, public_id=config_id).exists():
            raise ConfigNotFound(f"No config {config_id} in this workspace.")
        raise ConfigNotFound(
            f"Config {config_id} has no version {number}: register against a published version it serves."
        )

    def get(self, config_pk: int, number: int) -> ConfigVersion | None:
        """A stored request's version (loaded if this process has not seen it; None if there is none)."""
        self.load({(config_pk, number)})
        return self._by_key.get((config_pk, number))

    def load(self, keys: set[tuple[int, int]]) -> None:
        """Keep the (config pk, number) versions this process has not seen yet, in one query."""
        missing = {key for key in keys if key not in self._by_key}
        if not missing:
            return
        query = Q()
        for config_pk, number in missing:
            query |= Q(config_id=config_pk, number=number)
        for version in ConfigVersion.objects.filter(query).select_related("config"):
            self._keep(version)

    def many(self, keys: set[tuple[int, int]]) -> dict[tuple[int, int], ConfigVersion | None]:
        """The (config pk, number) versions, those not kept yet read in one query (a page of cards)."""
        self.load(keys)
        return {key: self._by_key.get(key) for key in keys}

    def clear(self) -> None:
        with self._lock:
            self._by_key.clear()
            self._by_name.clear()


frozen_versions = FrozenVersions()


def rule_approver_groups(*, config_pk: int, number: int, rule_id: str) -> list[str]:
    """The approver groups (grp_…) a published rule names: empty for every reviewer (or no such rule)."""
    version = frozen_versions.get(config_pk, number) if rule_id else None
    rule = version.rule(rule_id) if version is not None else None
    return list(rule.get("approver_groups") or []) if rule else []
