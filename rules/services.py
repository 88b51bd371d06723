"""Writes on configs, their draft rules, publishing and pinning. Pages, API and CLI call these."""

from typing import Any

from django.contrib.auth.base_user import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from audit.services import actor_of, audit_append
from workspaces.models import Workspace

from . import selectors
from .exceptions import NothingToPublish, PlanRequired
from .models import Config, ConfigVersion, Rule

RULE_FIELDS = (
    "kind",
    "match",
    "point",
    "enabled",
    "message",
    "order",
    "notify",
    "escalate_to",
    "escalate_after_seconds",
    "approvals_required",
    "self_approval",
    "allow_run_grant",
    "require_passkey",
    "on_unreachable",
    "condition",
    "mode",
    "allow_edit",
    "approver_groups",
)
CONFIG_FIELDS = ("name", "pass_information_level", "token_cap_per_turn", "token_cap_mode", "questions_notify")


def _audit(*, config: Config, user: AbstractBaseUser | None, action: str, object: str, data: dict) -> None:
    """Each change below is recorded in the audit log, in its own transaction."""
    audit_append(
        workspace_id=config.workspace_id,
        actor=actor_of(user=user),
        action=action,
        object=object,
        data={"config_id": config.public_id, **data},
    )


def _rule_changed(*, rule: Rule, user: AbstractBaseUser | None, change: str) -> None:
    _audit(
        config=rule.config,
        user=user,
        action="rule.changed",
        object=rule.public_id,
        data={"change": change, "rule": rule.frozen()},
    )


@transaction.atomic
def config_create(*, workspace: Workspace, name: str, user: AbstractBaseUser | None = None) -> Config:
    config = Config(workspace=workspace, name=name)
    config.full_clean(exclude=["workspace", "public_id"])
    config.save()
    _audit(
        config=config,
        user=user,
        action="config.changed",
        object=config.public_id,
        data={"change": "created", "name": name},
    )
    return config


@transaction.atomic
def config_update(*, config: Config, user: AbstractBaseUser | None = None, **changes: Any) -> Config:
    unknown = set(changes) - set(CONFIG_FIELDS)
    if unknown:
        raise TypeError(f"Not a config setting: {', '.join(sorted(unknown))}")
    if "questions_notify" in changes:
        changes["questions_notify"] = _questions_notify_checked(config=config, ids=changes["questions_notify"])
    for field, value in changes.items():
        setattr(config, field, value)
    config.full_clean(exclude=["workspace", "public_id"])
    config.save(update_fields=list(changes) or None)
    _audit(
        config=config,
        user=user,
        action="config.changed",
        object=config.public_id,
        data={"change": "updated", **{field: getattr(config, field) for field in changes}},
    )
    return config


def _questions_notify_checked(*, config: Config, ids: list[str]) -> list[str]:
    """Contact ids of this config's draft, each once, in the order given; another id is a 400 naming the field."""
    known = set(config.contacts.values_list("public_id", flat=True))
    unknown = [contact_id for contact_id in ids if contact_id not in known]
    if unknown:
        raise ValidationError(
            {"questions_notify": f"{unknown[0]} is not a contact of {config.public_id}: name this config's contacts."}
        )
    return list(dict.fromkeys(ids))


@transaction.atomic
def rule_create(*, config: Config, user: AbstractBaseUser | None = None, **fields: Any) -> Rule:
    """A new rule starts as "approve every delete" unless told otherwise."""
    rule = Rule(config=config, **{k: v for k, v in fields.items() if k in RULE_FIELDS})
    rule.full_clean(exclude=["config", "public_id"])
    rule.save()
    _rule_changed(rule=rule, user=user, change="created")
    return rule


@transaction.atomic
def rule_update(*, rule: Rule, user: AbstractBaseUser | None = None, **changes: Any) -> Rule:
    for field in RULE_FIELDS:
        if field in changes:
            setattr(rule, field, changes[field])
    rule.full_clean(exclude=["config", "public_id"])
    rule.save()
    _rule_changed(rule=rule, user=user, change="updated")
    return rule


@transaction.atomic
def rule_delete(*, rule: Rule, user: AbstractBaseUser | None = None) -> None:
    _rule_changed(rule=rule, user=user, change="deleted")
    rule.delete()


def plan_refusal(*, workspace: Workspace, enabled_rules: int) -> str | None:
    """Why this draft cannot be published on this plan, or None."""
    if workspace.hitl_available or not enabled_rules:
        return None
    return (
        f"Human-in-the-Loop needs a Pro or Enterprise plan, and this draft has {enabled_rules} enabled "
        f"rule{'s' if enabled_rules != 1 else ''}. Disable {'them' if enabled_rules != 1 else 'it'} to publish on "
        "the Free plan, or ask staff to move the workspace to Pro."
    )


@transaction.atomic
def config_publish(*, config: Config, user: AbstractBaseUser | None, note: str = "") -> ConfigVersion:
    """Freeze the draft (rules, contacts, token caps, pass information level) into version N+1.

    Publishing serves the new version: any pin is released, because publishing is the act of
    putting the draft live. Pin again to hold an older one.
    """
    # Lock the config row so two publishes cannot both take the same N+1.
    config = Config.objects.select_for_update().select_related("workspace").get(pk=config.pk)
    rules = [rule.frozen() for rule in config.rules.all()]
    refusal = plan_refusal(workspace=config.workspace, enabled_rules=sum(rule["enabled"] for rule in rules))
    if refusal:
        raise PlanRequired(refusal)
    if len(note) > 2000:
        raise ValidationError({"note": "note is at most 2,000 characters"})
    latest = config.versions.order_by("-number").first()
    unchanged = selectors.nothing_to_publish(selectors.draft_frozen(config), latest, config.pinned_version)
    if unchanged:
        raise NothingToPublish(unchanged)
    number = latest.number + 1 if latest is not None else 1
    version = ConfigVersion.objects.create(
        config=config,
        number=number,
        published_at=timezone.now(),
        published_by=user if getattr(user, "is_authenticated", False) else None,
        note=note,
        rules=rules,
        contacts=[contact.frozen() for contact in config.contacts.all()],
        token_caps=config.token_caps,
        pass_information_level=config.pass_information_level,
        questions_notify=list(config.questions_notify or []),
    )
    if config.pinned_version is not None:
        config.pinned_version = None
        config.save(update_fields=["pinned_version"])
    _audit(
        config=config,
        user=user,
        action="config.published",
        object=config.public_id,
        data={"version": number, "note": note},
    )
    return version


@transaction.atomic
def config_pin(*, config: Config, version: int, user: AbstractBaseUser | None = None) -> ConfigVersion:
    """Serve `version` (roll back = pin an older one). Raises ConfigVersion.DoesNotExist."""
    config = Config.objects.select_for_update().get(pk=config.pk)
    frozen = config.versions.get(number=version)
    config.pinned_version = version
    config.save(update_fields=["pinned_version"])
    _audit(config=config, user=user, action="config.pinned", object=config.public_id, data={"version": version})
    return frozen
