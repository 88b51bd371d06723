from functools import cached_property
from typing import Any, NoReturn

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.utils import timezone

from common.ids import PublicIdMixin
from people.selectors import unknown_groups
from workspaces.models import Workspace

from .conditions import condition_error
from .vocabulary import (
    ANY,
    EDIT_NEEDS_FULL,
    EDIT_NEEDS_ONE_APPROVAL,
    FROZEN_CONTACT_DEFAULTS,
    FROZEN_RULE_DEFAULTS,
    MAX_APPROVALS_REQUIRED,
    NO_GRANT_WITH_PASSKEY,
    NO_GRANT_WITH_QUORUM,
    AskIn,
    OnReject,
    OnUnreachable,
    PassInformationLevel,
    RuleKind,
    RuleMode,
    RulePoint,
    TokenCapMode,
    match_error,
    with_defaults,
)


class Config(PublicIdMixin, models.Model):
    """An agent config: an editable draft and immutable numbered versions."""

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="configs")
    public_id = models.CharField(max_length=24, unique=True, editable=False)
    public_id_prefix = "cfg"
    name = models.CharField(max_length=200)
    pass_information_level = models.CharField(
        max_length=8, choices=PassInformationLevel.choices, default=PassInformationLevel.SUMMARY
    )
    token_cap_per_turn = models.PositiveIntegerField(null=True, blank=True)
    token_cap_mode = models.CharField(max_length=8, choices=TokenCapMode.choices, default=TokenCapMode.PROMPT)
    # Contact ids (con_…) told when a run asks a question or shows a plan (approvals/questions/validate.py).
    questions_notify = models.JSONField(default=list, blank=True)
    # None serves the newest version; a number serves that version (pin / roll back).
    pinned_version = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        indexes = [models.Index(fields=["workspace", "name"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.public_id})"

    def clean(self) -> None:
        # A rule allowing edits needs the exact arguments (level full): lowering the level would leave it
        # offering an editor over arguments nobody passes, so the level waits until no rule allows edits.
        if self.pk and self.pass_information_level != PassInformationLevel.FULL:
            editing = list(self.rules.filter(allow_edit=True).values_list("public_id", flat=True)[:5])
            if editing:
                raise ValidationError(
                    {
                        "pass_information_level": f"{', '.join(editing)} allow{'s' if len(editing) == 1 else ''} "
                        "approving with edits, which needs level full: set allow_edit to false on "
                        f"{'it' if len(editing) == 1 else 'them'} first."
                    }
                )

    @property
    def token_caps(self) -> dict:
        return {"per_turn": self.token_cap_per_turn, "mode": self.token_cap_mode}


class ConfigVersionQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> NoReturn:
        raise TypeError("A published config version never changes")

    def delete(self) -> NoReturn:
        raise TypeError("A published config version is never deleted: `cfg@N` must always mean the same content")


class ConfigVersion(models.Model):
    """A frozen copy of a config's draft. Immutable: the database refuses any UPDATE or DELETE.

    Never deleted, so a number is never reused: N+1 is always above every number ever published.
    """

    # PROTECT: a config with published versions cannot be deleted either (engines hold `cfg@N`).
    config = models.ForeignKey(Config, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()
    published_at = models.DateTimeField()
    # PROTECT, not SET_NULL: the row never changes, so its publisher cannot be deleted (deactivate them).
    published_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.PROTECT, related_name="+")
    note = models.CharField(max_length=2000, blank=True)
    # Frozen as the API shows them: a list of rule dicts (ids as in the draft), contacts likewise.
    rules = models.JSONField(default=list)
    contacts = models.JSONField(default=list)
    token_caps = models.JSONField(default=dict)
    pass_information_level = models.CharField(max_length=8, choices=PassInformationLevel.choices)
    # Frozen from the draft like its contacts: who is told of this version's questions and plans.
    questions_notify = models.JSONField(default=list, blank=True)

    objects = ConfigVersionQuerySet.as_manager()

    class Meta:
        ordering = ["-number"]
        constraints = [models.UniqueConstraint(fields=["config", "number"], name="one_number_per_version")]

    def __str__(self) -> str:
        return f"{self.config.public_id}@{self.number}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise TypeError("A published config version never changes")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("A published config version is never deleted: `cfg@N` must always mean the same content")

    @classmethod
    def from_db(cls, db: str | None, field_names: list[str], values: list) -> "ConfigVersion":
        """A version as loaded, its frozen rules and contacts completed with the keys they predate."""
        version = super().from_db(db, field_names, values)
        if "rules" in version.__dict__:  # not deferred (.only() / .defer())
            version.rules = [with_defaults(rule, FROZEN_RULE_DEFAULTS) for rule in version.rules]
        if "contacts" in version.__dict__:
            version.contacts = [with_defaults(contact, FROZEN_CONTACT_DEFAULTS) for contact in version.contacts]
        return version

    def contact(self, contact_id: str) -> dict | None:
        return self._contacts_by_id.get(contact_id)

    # By id, built once per loaded version: a cached version (rules.versions) answers every
    # delivery the outbox writes for it, and a scan per lookup grew with the version's size.
    @cached_property
    def _contacts_by_id(self) -> dict[str, dict]:
        return {contact["id"]: contact for contact in reversed(self.contacts)}  # the first of an id wins

    @cached_property
    def _rules_by_id(self) -> dict[str, dict]:
        return {rule["id"]: rule for rule in reversed(self.rules)}

    @property
    def enabled_rules(self) -> list[dict]:
        return [rule for rule in self.rules if rule["enabled"]]

    def rule(self, rule_id: str) -> dict | None:
        """One frozen rule by id, as a copy (callers may annotate it; loaded versions are cached)."""
        rule = self._rules_by_id.get(rule_id)
        return None if rule is None else dict(rule)


class Rule(PublicIdMixin, models.Model):
    """One gate in a config's draft."""

    config = models.ForeignKey(Config, on_delete=models.CASCADE, related_name="rules")
    public_id = models.CharField(max_length=24, unique=True, editable=False)
    public_id_prefix = "rul"
    kind = models.CharField(max_length=16, choices=RuleKind.choices, default=RuleKind.DELETE)
    match = models.CharField("Which one", max_length=500, default=ANY, blank=True)
    point = models.CharField(max_length=8, choices=RulePoint.choices, default=RulePoint.ENTRY)
    enabled = models.BooleanField(default=True)
    message = models.CharField(max_length=2000, blank=True)
    order = models.PositiveIntegerField(default=10)
    # Contact public ids (con_…) of the same config: told of every event of the rule's requests,
    # and, once, if a request is still pending escalate_after_seconds after it was created.
    notify = models.JSONField(default=list, blank=True)
    escalate_to = models.JSONField(default=list, blank=True)
    escalate_after_seconds = models.PositiveIntegerField(null=True, blank=True)
    approvals_required = models.PositiveSmallIntegerField(
        default=1,
        validators=[MinValueValidator(1), MaxValueValidator(MAX_APPROVALS_REQUIRED)],
        help_text="Distinct reviewers who must approve (1–5); one rejection rejects.",
    )
    self_approval = models.BooleanField(
        default=False, help_text="May the person a run acts for (requested_by) approve its requests?"
    )
    allow_run_grant = models.BooleanField(
        default=False, help_text="May a reviewer approve the rest of a run at once (rules needing one approval only)?"
    )
    # Step-up (passkeys/): approving needs a fresh passkey assertion on the portal's page.
    require_passkey = models.BooleanField(
        default=False, help_text="Does approving need the reviewer's passkey, on the portal's page?"
    )
    on_unreachable = models.CharField(
        max_length=8,
        choices=OnUnreachable.choices,
        default=OnUnreachable.WAIT,
        help_text="When nobody could be told of a request and nobody opened it: wait for its deadline, "
        "or end it as undeliverable after HITL_UNDELIVERABLE_SECONDS.",
    )
    # A CEL expression (rules/conditions.py): the rule asks only about calls it holds for; blank is every call.
    condition = models.TextField(blank=True, default="")
    mode = models.CharField(max_length=8, choices=RuleMode.choices, default=RuleMode.GATE)
    allow_edit = models.BooleanField(
        default=False,
        help_text="May a reviewer approve a call with changed arguments (one approval, level full only)?",
    )
    # Approver group public ids (grp_…) of the same workspace: only their members (and their live
    # delegates) decide this rule's requests (people/deciders.py); empty is every reviewer.
    approver_groups = models.JSONField(default=list, blank=True)
    # Fixed for now, stored so the model can grow.
    ask_in = models.CharField(max_length=16, choices=AskIn.choices, default=AskIn.CONSOLE, editable=False)
    on_reject = models.CharField(max_length=16, choices=OnReject.choices, default=OnReject.HALT, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["order", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(approvals_required__gte=1, approvals_required__lte=MAX_APPROVALS_REQUIRED),
                name="rule_approvals_required_1_to_5",
            ),
            models.CheckConstraint(
                condition=Q(approvals_required=1) | Q(allow_run_grant=False), name="rule_no_grant_with_quorum"
            ),
            models.CheckConstraint(
                condition=Q(require_passkey=False) | Q(allow_run_grant=False), name="rule_no_grant_with_passkey"
            ),
            models.CheckConstraint(
                condition=Q(approvals_required=1) | Q(allow_edit=False), name="rule_no_edit_with_quorum"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.match} at {self.point}"

    def clean(self) -> None:
        self.match = (self.match or "").strip()
        errors = {}
        if error := match_error(self.kind, self.match):
            errors["match"] = error
        errors.update(self._contact_errors())
        if error := self._groups_error():
            errors["approver_groups"] = error
        if self.allow_run_grant and (self.approvals_required or 1) > 1:
            errors["allow_run_grant"] = NO_GRANT_WITH_QUORUM
        elif self.allow_run_grant and self.require_passkey:
            errors["allow_run_grant"] = NO_GRANT_WITH_PASSKEY
        # Kept as typed (a refusal's position counts from its first character); only blank is no condition.
        self.condition = self.condition if (self.condition or "").strip() else ""
        if error := condition_error(self.condition):
            errors["condition"] = error
        if self.allow_edit:
            if (self.approvals_required or 1) > 1:
                errors["allow_edit"] = EDIT_NEEDS_ONE_APPROVAL
            elif self.config_id and self.config.pass_information_level != PassInformationLevel.FULL:
                errors["allow_edit"] = EDIT_NEEDS_FULL
        if errors:
            raise ValidationError(errors)

    def _contact_errors(self) -> dict[str, str]:
        """notify / escalate_to must name contacts of this config; the delay must be in range."""
        errors = {}
        known = set(self.config.contacts.values_list("public_id", flat=True)) if self.config_id else set()
        for field in ("notify", "escalate_to"):
            ids = getattr(self, field)
            if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
                errors[field] = f"{field} must be a list of contact ids (con_…)"
                continue
            unknown = [i for i in ids if i not in known]
            if unknown:
                errors[field] = (
                    f"{', '.join(unknown[:5])} {'is' if len(unknown) == 1 else 'are'} not a contact of this config: "
                    "add the contact on the Contacts tab first, or name one that is there"
                )
            setattr(self, field, list(dict.fromkeys(ids)))  # a contact named twice is told once
        seconds = self.escalate_after_seconds
        if seconds is not None and not 60 <= seconds <= 86_400:
            errors["escalate_after_seconds"] = (
                "escalate_after_seconds must be between 60 and 86,400 (24 hours), or null"
            )
        elif self.escalate_to and seconds is None:
            errors["escalate_after_seconds"] = (
                "escalate_to needs escalate_after_seconds (60–86,400): how long a request may wait before escalating"
            )
        return errors

    def _groups_error(self) -> str:
        """approver_groups must name groups of this workspace (each once)."""
        ids = self.approver_groups
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            return "approver_groups must be a list of group ids (grp_…)"
        self.approver_groups = list(dict.fromkeys(ids))
        unknown = unknown_groups(workspace_id=self.config.workspace_id, ids=self.approver_groups) if ids else []
        if unknown:
            return (
                f"{', '.join(unknown[:5])} {'is' if len(unknown) == 1 else 'are'} not a group of this workspace: "
                "create it on the People tab first, or name one that is there"
            )
        return ""

    def names_contact(self, contact_id: str) -> bool:
        return contact_id in (self.notify or []) or contact_id in (self.escalate_to or [])

    def frozen(self) -> dict:
        """The rule as a version freezes it (and as the API shows it)."""
        return {
            "id": self.public_id,
            "kind": self.kind,
            "match": self.match,
            "point": self.point,
            "enabled": self.enabled,
            "message": self.message,
            "order": self.order,
            "notify": list(self.notify or []),
            "escalate_to": list(self.escalate_to or []),
            "escalate_after_seconds": self.escalate_after_seconds,
            "ask_in": self.ask_in,
            "on_reject": self.on_reject,
            "approvals_required": self.approvals_required,
            "self_approval": self.self_approval,
            "allow_run_grant": self.allow_run_grant,
            "require_passkey": self.require_passkey,
            "on_unreachable": self.on_unreachable,
            "condition": self.condition,
            "mode": self.mode,
            "allow_edit": self.allow_edit,
            "approver_groups": list(self.approver_groups or []),
        }


class RuleCount(models.TextChoices):
    ALLOWED = "allowed", "Let through by its condition"
    SHADOW = "shadow", "Would have asked (shadow rule)"


class RuleDayCount(models.Model):
    """Registrations a rule let through without storing a request, per rule, day and why.

    A condition that is false stores nothing (API.md, "Policy") and a shadow rule queues nothing:
    these counts are all that is kept of them, for the Rules tab, insights and the dry run.
    One row per (config, rule, day, kind), counted up by an upsert in the registration's statement.
    """

    config = models.ForeignKey(Config, on_delete=models.CASCADE, related_name="rule_counts", db_index=False)
    rule_id = models.CharField(max_length=24)
    day = models.DateField()
    kind = models.CharField(max_length=8, choices=RuleCount.choices)
    count = models.PositiveBigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["config", "rule_id", "day", "kind"], name="one_count_per_rule_day_kind")
        ]

    def __str__(self) -> str:
        return f"{self.rule_id} {self.day} {self.kind}: {self.count}"


class ProposalStatus(models.TextChoices):
    OPEN = "open", "Open — waiting for an admin"
    ACCEPTED = "accepted", "Accepted into the draft"
    DISMISSED = "dismissed", "Dismissed"


class ConditionProposal(PublicIdMixin, models.Model):
    """ "Approve always" from a card: a reviewer proposes a condition that would have let the call through.

    Never live on its own: an admin accepts it into the draft (the rule's condition changes there),
    then publishes as usual; or dismisses it.
    """

    config = models.ForeignKey(Config, on_delete=models.CASCADE, related_name="proposals")
    public_id = models.CharField(max_length=24, unique=True, editable=False)
    public_id_prefix = "prp"
    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="proposals")
    condition = models.TextField()
    # The condition the rule had in the version the request was registered under, for the admin to compare.
    condition_before = models.TextField(blank=True)
    approval_public_id = models.CharField(max_length=24)  # the request approved with it (apr_…)
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+", db_index=False
    )
    proposed_by_email = models.CharField(max_length=254)
    created_at = models.DateTimeField(default=timezone.now)
    status = models.CharField(max_length=10, choices=ProposalStatus.choices, default=ProposalStatus.OPEN)
    resolved_by_email = models.CharField(max_length=254, blank=True)
    resolved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.public_id} on {self.rule_id}"
