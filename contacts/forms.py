from django import forms

from .models import Contact


class ContactForm(forms.ModelForm):
    """Contact.clean() runs in the ModelForm's validation, so its message lands next to the reference."""

    class Meta:
        model = Contact
        fields = ["name", "channel", "channel_ref"]
        help_texts = {"channel_ref": "A ${ENV_VAR} placeholder such as ${APPROVERS_SLACK_WEBHOOK}; empty for None."}
