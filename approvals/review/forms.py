from collections.abc import Iterable
from typing import Any

from django import forms

from approvals.edits import checks as edits
from approvals.grants.services import GRANT_TTL_DEFAULT, GRANT_TTL_MAX, GRANT_TTL_MIN
from approvals.models import ApprovalKind, Status
from approvals.questions.validate import QUESTION_WORDS
from approvals.review.decide import DECISIONS
from approvals.review.selectors import HistoryFilters
from rules.conditions import CONDITION_MAX
from rules.models import Config
from rules.vocabulary import RuleKind


class DecisionForm(forms.Form):
    """A card's buttons: the decision word rides on the button pressed, the reason in the box.

    "Approve for the rest of this run" is its own button (`grant=run`), with the grant's duration.
    """

    decision = forms.ChoiceField(
        choices=[(word, word) for word in dict.fromkeys([*DECISIONS, *QUESTION_WORDS])], required=False
    )
    reason = forms.CharField(
        required=False,  # its limit is the decide service's, which says so beside the buttons
        strip=True,
        widget=forms.Textarea(attrs={"rows": 1, "placeholder": "Reason (optional) — passed back to the agent"}),
    )
    grant = forms.ChoiceField(choices=[("run", "run")], required=False)
    grant_ttl_seconds = forms.IntegerField(min_value=GRANT_TTL_MIN, max_value=GRANT_TTL_MAX, required=False)
    # "Approve always" is its own button (`always=1`), with the condition to propose in its box.
    always = forms.BooleanField(required=False)
    propose_condition = forms.CharField(required=False, strip=False, max_length=CONDITION_MAX)
    # The card's arguments editor (rules with allow_edit): the JSON to run instead, as typed.
    arguments = forms.CharField(required=False, strip=False, widget=forms.Textarea)

    def clean(self) -> dict:
        data = super().clean()
        if data.get("always"):
            data["decision"] = "approve"
        if data.get("grant"):
            data["decision"] = data.get("decision") or "approve"
        elif not data.get("decision") and "decision" not in self.errors:
            self.add_error("decision", "Press one of the buttons: approve or reject (proceed or stop).")
        return data

    def proposed_condition(self) -> str | None:
        """The condition "Approve always" proposes, or None for a plain decision."""
        return self.cleaned_data.get("propose_condition", "") if self.cleaned_data.get("always") else None

    def edit(self) -> tuple[object, bool]:
        """(arguments, edit) for approval_decide: the editor's JSON when it was sent with an approval."""
        if "arguments" not in self.data or self.cleaned_data.get("decision") != "approve":
            return None, False
        return edits.parse_edited(self.cleaned_data["arguments"]), True

    def grant_ttl(self) -> int | None:
        if not self.cleaned_data.get("grant"):
            return None
        return self.cleaned_data.get("grant_ttl_seconds") or GRANT_TTL_DEFAULT


STATUS_CHOICES = [("", "Any status")] + [(s.value, s.label) for s in Status if s != Status.PENDING]
KIND_CHOICES = (
    [("", "Any kind")]
    + [(k.value, k.label) for k in ApprovalKind]
    + [(k.value, f"Gate: {k.label.lower()}") for k in RuleKind]
)


class HistoryFilterForm(forms.Form):
    status = forms.ChoiceField(choices=STATUS_CHOICES, required=False)
    config = forms.ChoiceField(choices=[("", "Any config")], required=False)
    kind = forms.ChoiceField(choices=KIND_CHOICES, required=False)
    date_from = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    date_to = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))
    rule = forms.CharField(
        required=False, max_length=24, label="Rule id", widget=forms.TextInput(attrs={"placeholder": "rul_…"})
    )
    decided_by = forms.CharField(required=False, max_length=254, label="Decided by")
    q = forms.CharField(required=False, max_length=200, label="Text")

    def __init__(self, *args: Any, configs: Iterable[Config] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["config"].choices = [("", "Any config")] + [(c.public_id, c.name) for c in configs]

    def clean(self) -> dict:
        data = super().clean()
        if data.get("date_from") and data.get("date_to") and data["date_from"] > data["date_to"]:
            self.add_error("date_to", "The To date must be on or after the From date.")
        return data

    def filters(self) -> HistoryFilters:
        """The valid filters; a filter the reader got wrong is dropped (its error is shown beside it)."""
        self.is_valid()  # fields with errors are left out of cleaned_data
        data = self.cleaned_data
        return HistoryFilters(
            status=data.get("status") or "",
            config=data.get("config") or "",
            kind=data.get("kind") or "",
            date_from=data.get("date_from"),
            date_to=data.get("date_to"),
            rule=data.get("rule") or "",
            decided_by=data.get("decided_by") or "",
            text=data.get("q") or "",
        )
