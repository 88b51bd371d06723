"""Input and output shapes of the admin API (docs/api.md, "Configs, rules, contacts")."""

from typing import Literal

from rest_framework import serializers

from common.fields import JsonInput
from common.pagination import page_serializer

from .conditions import CONDITION_MAX
from .models import ConfigVersion
from .vocabulary import (
    MAX_APPROVALS_REQUIRED,
    AskIn,
    Channel,
    OnReject,
    OnUnreachable,
    PassInformationLevel,
    RuleKind,
    RuleMode,
    RulePoint,
    TokenCapMode,
    match_field,
)

# PostgreSQL's integer column: beyond it the database would refuse, so the serializer refuses first.
MAX_INT = 2_147_483_647


def _choice(choices, **kwargs) -> serializers.ChoiceField:
    """A choice field whose refusal lists what it accepts."""
    values = ", ".join(value for value, _ in choices)
    return serializers.ChoiceField(
        choices=choices, error_messages={"invalid_choice": f'"{{input}}" is not one of: {values}.'}, **kwargs
    )


class TokenCapsSerializer(JsonInput):
    per_turn = serializers.IntegerField(min_value=1, max_value=MAX_INT, allow_null=True, required=False)
    mode = _choice(TokenCapMode.choices, required=False)


class ConfigSerializer(serializers.Serializer):
    id = serializers.CharField(source="public_id")
    name = serializers.CharField()
    pass_information_level = _choice(PassInformationLevel.choices)
    token_caps = TokenCapsSerializer()
    questions_notify = serializers.ListField(
        child=serializers.CharField(), help_text="contact ids (con_…) told when a run asks a question or shows a plan"
    )
    served_version = serializers.IntegerField(source="served_number", allow_null=True)
    latest_version = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()


class ConfigCreateSerializer(JsonInput):
    name = serializers.CharField(max_length=200)


class ConfigUpdateSerializer(JsonInput):
    name = serializers.CharField(max_length=200, required=False)
    pass_information_level = _choice(PassInformationLevel.choices, required=False)
    token_caps = TokenCapsSerializer(required=False)
    # Ids are exact, as a rule's notify: an id that is not a contact of this config is named (400).
    questions_notify = serializers.ListField(
        child=serializers.CharField(max_length=24, trim_whitespace=False), max_length=50, required=False
    )

    def changes(self) -> dict:
        """The validated data as `config_update` keywords."""
        data = dict(self.validated_data)
        caps = data.pop("token_caps", {})
        if "per_turn" in caps:
            data["token_cap_per_turn"] = caps["per_turn"]
        if "mode" in caps:
            data["token_cap_mode"] = caps["mode"]
        return data


class RuleSerializer(serializers.Serializer):
    """A rule as `Rule.frozen()` gives it: the draft's rules and a version's frozen ones alike."""

    id = serializers.CharField()
    kind = _choice(RuleKind.choices)
    match = serializers.CharField()
    point = _choice(RulePoint.choices)
    enabled = serializers.BooleanField()
    message = serializers.CharField(allow_blank=True)
    order = serializers.IntegerField()
    # Versions published before a key existed have it filled in as they load (FROZEN_RULE_DEFAULTS).
    notify = serializers.ListField(child=serializers.CharField())
    escalate_to = serializers.ListField(child=serializers.CharField())
    escalate_after_seconds = serializers.IntegerField(allow_null=True)
    ask_in = _choice(AskIn.choices, read_only=True)
    on_reject = _choice(OnReject.choices, read_only=True)
    approvals_required = serializers.IntegerField(
        help_text="Distinct reviewers who must approve (1–5); one rejection rejects.",
    )
    self_approval = serializers.BooleanField(
        help_text="Whether the person the run acts for (the request's requested_by) may approve it.",
    )
    allow_run_grant = serializers.BooleanField(
        help_text="Whether a reviewer may approve the rest of a run at once (only with approvals_required 1).",
    )
    require_passkey = serializers.BooleanField(
        help_text="Whether approving needs a fresh passkey assertion by the reviewer, made on the request's page "
        "(every other way to approve answers 403 `passkey_required`; rejecting never needs one).",
    )
    on_unreachable = _choice(
        OnUnreachable.choices,
        help_text='"wait" (default) or "reject": end a request nobody could be reached for as undeliverable.',
    )
    condition = serializers.CharField(
        allow_blank=True,
        help_text="A CEL expression over target, operation, caller, requested_by, run_id, arguments and now: the "
        "rule asks only about calls it is true for (blank: every call).",
    )
    mode = _choice(
        RuleMode.choices, help_text="gate pauses the call; shadow never pauses, it counts what it would ask."
    )
    allow_edit = serializers.BooleanField(
        help_text="Whether a reviewer may approve a call with edited arguments (only with approvals_required 1 "
        "and pass information level full).",
    )
    approver_groups = serializers.ListField(
        child=serializers.CharField(),
        help_text="Approver groups (grp_…): only their members (and their live delegates) decide this rule's "
        "requests; others get 403 `not_an_approver`. Empty: every reviewer.",
    )


class ServedGateSerializer(RuleSerializer):
    """A gate of the served table: the rule, and what its `match` is compared with (rules.vocabulary.MATCH_FIELDS)."""

    match_field = serializers.SerializerMethodField(
        help_text="The field of a call `match` is compared with: `operation` for a delete rule (delete_file, "
        "drop_table, on any target), `target` for the other kinds. `*` takes in every call. The portal's "
        "registration check and every client's find_gate apply it."
    )

    def get_match_field(self, rule: dict) -> Literal["operation", "target"]:
        return match_field(rule["kind"])


class RuleInputSerializer(JsonInput):
    """POST and PATCH. Model validation (Rule.clean) gives the spec's match messages."""

    kind = _choice(RuleKind.choices, required=False)
    match = serializers.CharField(max_length=500, allow_blank=True, allow_null=True, required=False)
    point = _choice(RulePoint.choices, required=False)
    enabled = serializers.BooleanField(required=False)
    message = serializers.CharField(max_length=2000, allow_blank=True, required=False)
    order = serializers.IntegerField(min_value=0, max_value=MAX_INT, required=False)
    # Ids are exact: not trimmed, so " con_…" or "\r" is named as no contact of this config, not as blank.
    notify = serializers.ListField(
        child=serializers.CharField(max_length=24, trim_whitespace=False), max_length=50, required=False
    )
    escalate_to = serializers.ListField(
        child=serializers.CharField(max_length=24, trim_whitespace=False), max_length=50, required=False
    )
    escalate_after_seconds = serializers.IntegerField(min_value=60, max_value=86_400, allow_null=True, required=False)
    approvals_required = serializers.IntegerField(
        min_value=1,
        max_value=MAX_APPROVALS_REQUIRED,
        required=False,
        error_messages={
            "min_value": f"approvals_required is from 1 to {MAX_APPROVALS_REQUIRED} distinct reviewers.",
            "max_value": f"approvals_required is from 1 to {MAX_APPROVALS_REQUIRED} distinct reviewers.",
        },
    )
    self_approval = serializers.BooleanField(required=False)
    allow_run_grant = serializers.BooleanField(required=False)
    require_passkey = serializers.BooleanField(required=False)
    on_unreachable = _choice(OnUnreachable.choices, required=False)
    # Compiled by Rule.clean, whose refusal names the position; the length is refused here first.
    condition = serializers.CharField(
        max_length=CONDITION_MAX, allow_blank=True, allow_null=True, trim_whitespace=False, required=False
    )
    mode = _choice(RuleMode.choices, required=False)

    def validate_condition(self, value: str | None) -> str:
        return value or ""

    allow_edit = serializers.BooleanField(required=False)
    approver_groups = serializers.ListField(
        child=serializers.CharField(max_length=24, trim_whitespace=False), max_length=20, required=False
    )

    def validate_match(self, value: str | None) -> str:
        return value or ""

    def fields_for_create(self) -> dict:
        data = dict(self.validated_data)
        # `{}` is "approve every delete" (match Any); a kind named without a match is a missing selector.
        if "kind" in data and "match" not in data:
            data["match"] = ""
        return data


# A contact as a version freezes it (Contact.frozen()): the versions' and the contacts API's shape.
def channel_field(required_message: str = "", **kwargs) -> serializers.ChoiceField:
    values = ", ".join(Channel.values)
    messages = {"invalid_choice": f'"{{input}}" is not one of: {values}.'}
    if required_message:
        messages["required"] = required_message
    return serializers.ChoiceField(choices=Channel.choices, error_messages=messages, **kwargs)


class ContactSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    channel = channel_field()
    channel_ref = serializers.CharField(allow_blank=True)
    secret_ref = serializers.CharField(allow_blank=True)  # older versions: filled in as they load


class VersionSerializer(serializers.Serializer):
    config_id = serializers.CharField(source="config.public_id")
    version = serializers.IntegerField(source="number")
    published_at = serializers.DateTimeField()
    published_by = serializers.SerializerMethodField()
    note = serializers.CharField(allow_blank=True)
    rules = RuleSerializer(many=True, read_only=True)
    contacts = ContactSerializer(many=True, read_only=True)
    token_caps = TokenCapsSerializer()
    pass_information_level = _choice(PassInformationLevel.choices)
    questions_notify = serializers.ListField(child=serializers.CharField())
    served = serializers.SerializerMethodField()

    def get_published_by(self, version: ConfigVersion) -> str | None:
        return version.published_by.email if version.published_by else None

    def get_served(self, version: ConfigVersion) -> bool:
        return version.number == self.context["served_number"]


class PublishSerializer(JsonInput):
    note = serializers.CharField(max_length=2000, allow_blank=True, required=False, default="")


class PinSerializer(JsonInput):
    version = serializers.IntegerField(min_value=1, max_value=MAX_INT)


ConfigPage = page_serializer(ConfigSerializer(many=True), "ConfigPage")
RulePage = page_serializer(RuleSerializer(many=True), "RulePage")
VersionPage = page_serializer(VersionSerializer(many=True), "VersionPage")
ContactPage = page_serializer(ContactSerializer(many=True), "ContactPage")


class SimulateSerializer(JsonInput):
    days = serializers.IntegerField(
        min_value=1,
        max_value=30,
        error_messages={"min_value": "days is from 1 to 30.", "max_value": "days is from 1 to 30."},
    )


class SimulationCountsSerializer(serializers.Serializer):
    would_ask = serializers.IntegerField(help_text="stored requests the draft's rule would still ask about")
    no_longer_asked = serializers.IntegerField(help_text="stored requests it would no longer ask about")
    newly_asked = serializers.IntegerField(help_text="calls let through unstored that it would now ask about")
    asked_before = serializers.IntegerField(help_text="requests stored in those days")


class SimulationRuleSerializer(SimulationCountsSerializer):
    rule_id = serializers.CharField()
    in_draft = serializers.BooleanField(help_text="false: a rule of the history the draft no longer has")
    condition_error = serializers.CharField(allow_null=True, help_text="the draft condition failed on some call")


class SimulationSerializer(serializers.Serializer):
    days = serializers.IntegerField()
    since = serializers.DateTimeField(help_text="the first moment counted (midnight UTC)")
    rules = SimulationRuleSerializer(many=True)
    total = SimulationCountsSerializer()
