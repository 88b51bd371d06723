from django import forms

from rules.models import RuleKind

from .models import ApprovalKind, Status
from .selectors import HistoryFilters
from .services import DECISIONS


class DecisionForm(forms.Form):
    """A card's buttons: the decision word rides on the button pressed, the reason in the box."""

    decision = forms.ChoiceField(choices=[(word, word) for word in DECISIONS])
    reason = forms.CharField(
        required=False,
        max_length=2000,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 1, "placeholder": "Reason (optional) — passed back to the agent"}),
    )


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

    def __init__(self, *args, configs=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["config"].choices = [("", "Any config")] + [(c.public_id, c.name) for c in configs]

    def clean(self):
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
        )
