"""The admin's forms. Every field is laid out by templates/forms/field.html (`{{ field.as_field_group }}`)."""

from django import forms
from django.urls import reverse
from django.utils.safestring import mark_safe

from people.selectors import groups_for

from .conditions import CONDITION_MAX
from .models import Config, Rule
from .vocabulary import ANY, MAX_APPROVALS_REQUIRED, RuleKind, RuleMode

# The "Which one" legend and the selector's hint per kind; htmx swaps them in as the kind changes
# (views.which_one, rules/_which_one.html), so this table is their only copy. Each says what the match is
# compared with, as rules.vocabulary.MATCH_FIELDS does for the portal and the clients.
WHICH_ONE = {
    RuleKind.DELETE: (
        "Which delete operation",
        "An operation name such as delete_file or drop_table: the rule gates that operation on any target. Or Any.",
    ),
    RuleKind.MCP_SERVER: (
        "Which MCP server (mcp_…)",
        "The MCP server's public id, such as mcp_billing. A rule gates a whole server, never one tool.",
    ),
    RuleKind.CELL: ("Which cell", "The call's target: a notebook or cell id, such as nb_warehouse, or Any."),
    RuleKind.WORKER: ("Which worker", "The call's target: the worker or sub-agent's name, such as researcher, or Any."),
}


# The ids field.html gives the "Which one" legend and the selector's hint (`<auto_id>_legend`,
# `<auto_id>_helptext`): what the htmx swap replaces.
WHICH_LEGEND_ID = "id_which_legend"
MATCH_HINT_ID = "id_match_helptext"


def which_one_for(kind: str) -> tuple[str, str]:
    return WHICH_ONE.get(kind, WHICH_ONE[RuleKind.DELETE])


class ConfigForm(forms.ModelForm):
    class Meta:
        model = Config
        fields = ["name"]

    @classmethod
    def rename(cls, config: Config) -> "ConfigForm":
        """The configs list's inline rename form: ids and label of its own row."""
        form = cls(instance=config, auto_id=f"rename-{config.public_id}-%s")
        form.fields["name"].label = f"New name for {config.name}"
        return form


class RuleForm(forms.ModelForm):
    """Rule.clean() runs in the ModelForm's validation, so its messages land next to `match`."""

    which = forms.ChoiceField(
        label="Which one",  # per kind: __init__
        choices=[("any", "Any (*)"), ("one", "This one")],
        widget=forms.RadioSelect,
        initial="any",
    )

    notify = forms.MultipleChoiceField(
        label="Notify",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Contacts told of every request this rule makes, and of its outcome.",
    )
    escalate_to = forms.MultipleChoiceField(
        label="Escalate to",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Contacts told once if a request is still pending after the delay below.",
    )
    approver_groups = forms.MultipleChoiceField(
        label="Only these groups decide",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every reviewer. Ticked: only the groups' members (and whoever stands in for one) "
        "decide its requests, and only they get its push notifications. Groups are kept on the People tab.",
    )
    escalate_after_seconds = forms.IntegerField(
        label="Escalate after (seconds)",
        required=False,
        min_value=60,
        max_value=86_400,
        help_text="60 to 86,400. Leave empty for no escalation.",
    )

    class Meta:
        model = Rule
        fields = [
            "kind",
            "which",
            "match",
            "point",
            "enabled",
            "message",
            "order",
            "approvals_required",
            "self_approval",
            "allow_run_grant",
            "require_passkey",
            "on_unreachable",
            "condition",
            "mode",
            "allow_edit",
        ]
        widgets = {
            "message": forms.Textarea(attrs={"rows": 2}),
            "condition": forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "maxlength": CONDITION_MAX}),
            "mode": forms.RadioSelect,
        }
        labels = {
            "kind": "Boundary",
            "match": "Selector",
            "point": "Point",
            "enabled": "Enabled",
            "message": "Message for the reviewer",
            "order": "Order",
            "approvals_required": "Approvals required",
            "self_approval": "The person the run acts for may approve it",
            "allow_run_grant": "Reviewers may approve the rest of a run at once",
            "require_passkey": "Approving needs the reviewer's passkey",
            "on_unreachable": "When nobody can be reached",
            "condition": "Only when (CEL)",
            "mode": "Mode",
            "allow_edit": "Reviewers may approve with edited arguments",
        }
        help_texts = {
            "order": "Lower numbers gate first.",
            "approvals_required": "How many different reviewers must approve (1–5). One rejection rejects.",
            "self_approval": mark_safe(  # a constant: nothing here comes from a user
                "Off (four eyes): whoever the engine names as <code>requested_by</code> may reject, never approve."
            ),
            "allow_run_grant": "Adds “Approve for the rest of this run” to its cards (1 h by default, at most 8 h). "
            "Only for rules needing one approval.",
            "require_passkey": "Approving is then done on the request's page with a passkey registered on the "
            "reviewer's account page; the API, CLI, Slack and email links may only reject.",
            "on_unreachable": "If no notification of a request could be delivered and nobody opened it: wait for "
            "its deadline, or end it as undeliverable (counted as rejected, never a person's rejection) after "
            "10 minutes (HITL_UNDELIVERABLE_SECONDS).",
            "condition": "Ask only about calls this is true for; empty asks about every call. It reads target, "
            "operation, caller, requested_by, run_id, arguments (null below level full) and now.",
            "mode": "Shadow never pauses a call: it counts what it would have asked, to try a rule first.",
            "allow_edit": "Adds an arguments editor to its cards: the engine runs what the reviewer approved. "
            "Only for rules needing one approval, in a config passing the exact arguments (level full).",
        }

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["match"].required = False
        self.fields["mode"].required = False  # a form without the field (older pages, tests) keeps the rule a gate
        self.fields["mode"].choices = RuleMode.choices
        self.fields["approvals_required"].required = False  # left out: one approval, as before the policy
        self.fields["on_unreachable"].required = False  # left out: wait, as before undeliverable existed
        # The model's validators say 1–5; the number input should too (the form field alone says min 0).
        self.fields["approvals_required"].widget.attrs.update(min=1, max=MAX_APPROVALS_REQUIRED)
        # The legend and hint follow the kind; changing it asks the server for the new ones (htmx).
        legend, hint = which_one_for(self["kind"].value() or RuleKind.DELETE)
        self.fields["which"].label = legend
        self.fields["match"].help_text = hint
        self.fields["kind"].widget.attrs.update(
            {"hx-get": reverse("rules:which_one"), "hx-target": f"#{WHICH_LEGEND_ID}", "hx-swap": "innerHTML"}
        )
        # Typing a selector picks "This one" (static/js/portal.js).
        one = [value for value, _ in self.fields["which"].choices].index("one")
        self.fields["match"].widget.attrs["data-checks"] = f"{self['which'].auto_id}_{one}"
        contacts = [(c.public_id, f"{c.name} ({c.get_channel_display()})") for c in self.instance.config.contacts.all()]
        self.fields["notify"].choices = contacts
        self.fields["escalate_to"].choices = contacts
        workspace = self.instance.config.workspace
        self.fields["approver_groups"].choices = [(g.public_id, g.name) for g in groups_for(workspace)]
        if not self.is_bound:
            self.initial["approver_groups"] = self.instance.approver_groups
            self.initial["notify"] = self.instance.notify
            self.initial["escalate_to"] = self.instance.escalate_to
            self.initial["escalate_after_seconds"] = self.instance.escalate_after_seconds
            self.initial["which"] = "any" if self.instance.match == ANY else "one"
            if self.instance.match == ANY:
                self.initial["match"] = ""

    def clean(self) -> dict:
        data = super().clean()
        if data.get("which") == "any":
            data["match"] = ANY
        # Rule.clean() judges these (same messages as the API); the instance must hold them first.
        for field in ("notify", "escalate_to", "escalate_after_seconds", "approver_groups"):
            if field in data:
                setattr(self.instance, field, data[field])
        if data.get("approvals_required") is None and "approvals_required" not in self.errors:
            data["approvals_required"] = 1
        if not data.get("on_unreachable") and "on_unreachable" not in self.errors:
            data["on_unreachable"] = "wait"
        if not data.get("mode"):
            data["mode"] = self.instance.mode or RuleMode.GATE
        data["condition"] = data.get("condition") or ""
        self.instance.condition = data["condition"]
        return data


class SettingsForm(forms.ModelForm):
    token_cap_per_turn = forms.IntegerField(
        label="Per-turn token cap",
        required=False,
        min_value=1,
        max_value=2_147_483_647,
        help_text="Tokens one agent turn may use. Leave empty for no cap.",
    )

    questions_notify = forms.MultipleChoiceField(
        label="Tell of questions and plans",
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="The contacts told when a run asks a question or shows a plan (frozen when you publish).",
    )

    class Meta:
        model = Config
        fields = ["name", "pass_information_level", "token_cap_per_turn", "token_cap_mode", "questions_notify"]
        labels = {"token_cap_mode": "When a turn reaches the cap"}
        help_texts = {
            "pass_information_level": "How much of a gated call the engine passes to the portal. "
            "Reviewers see the level on every card."
        }

    def __init__(self, *args, read_only: bool = False, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        contacts = self.instance.contacts.order_by("name", "id") if self.instance.pk else []
        self.fields["questions_notify"].choices = [(c.public_id, f"{c.name} ({c.channel})") for c in contacts]
        if read_only:  # a reviewer sees the values, not controls that would be refused
            for field in self.fields.values():
                field.disabled = True


class PublishForm(forms.Form):
    note = forms.CharField(
        label="Note (optional)",
        max_length=2000,
        required=False,
        widget=forms.TextInput(attrs={"placeholder": "What changed"}),
    )


class PinForm(forms.Form):
    version = forms.IntegerField(min_value=1, max_value=2_147_483_647)


YES_NO = [("", "Any"), ("yes", "Yes"), ("no", "No")]


class RuleFilterForm(forms.Form):
    """The Rules tab's filters (GET): a value nobody offered is shown as an error and dropped."""

    q = forms.CharField(required=False, max_length=200, label="Text")
    kind = forms.ChoiceField(choices=[("", "Any kind"), *RuleKind.choices], required=False)
    mode = forms.ChoiceField(choices=[("", "Any mode"), *((m.value, m.value) for m in RuleMode)], required=False)
    condition = forms.ChoiceField(choices=YES_NO, required=False, label="Has condition")
    enabled = forms.ChoiceField(choices=YES_NO, required=False)

    def filters(self) -> dict:
        self.is_valid()  # fields with errors are left out of cleaned_data
        return {name: value for name, value in self.cleaned_data.items() if value}
