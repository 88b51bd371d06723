from django import forms
from django.core.exceptions import ValidationError

from .models import Contact
from .references import reference_refusals


class ContactForm(forms.ModelForm):
    """Contact.clean() runs in the ModelForm's validation, so its message lands next to the reference."""

    class Meta:
        model = Contact
        fields = ["name", "channel", "channel_ref", "secret_ref"]
        help_texts = {
            "channel_ref": "A ${HITL_…} placeholder such as ${HITL_ONCALL_EMAIL} naming the variable that holds the "
            "address, URL or chat id (Telegram); empty for None and Web Push (which notifies every browser the "
            "workspace's reviewers subscribed on their account page).",
            "secret_ref": "Webhook only: the ${HITL_…} variable holding its whsec_… signing secret.",
        }

    def clean(self) -> dict:
        cleaned = super().clean()
        if not self.errors:
            given = {field: (cleaned.get(field) or "").strip() for field in ("channel", "channel_ref", "secret_ref")}
            for field, message in reference_refusals(workspace=self.instance.config.workspace, **given).items():
                self.add_error(field, message)
        return cleaned

    def add_error(self, field: str | None, error: ValidationError | str | list | dict) -> None:
        # Contact.clean() words its refusals for the API ("channel_ref must be …"); a person reads
        # them next to the field, so they start with the field's label instead.
        if field is None and isinstance(error, ValidationError) and hasattr(error, "error_dict"):
            error = ValidationError(
                {
                    name: [_labelled(message, name, self.fields.get(name)) for message in ValidationError(errors)]
                    for name, errors in error.error_dict.items()
                }
            )
        super().add_error(field, error)


def _labelled(message: str, name: str, field: forms.Field | None) -> str:
    if field is None or not message.startswith(f"{name} "):
        return message
    return f"{field.label}{message[len(name) :]}"
