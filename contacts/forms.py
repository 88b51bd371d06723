from django import forms

from .models import Contact


class ContactForm(forms.ModelForm):
    """Contact.clean() runs in the ModelForm's validation, so its message lands next to the reference."""

    class Meta:
        model = Contact
        fields = ["name", "channel", "channel_ref", "secret_ref"]
        help_texts = {
            "channel_ref": "A ${HITL_…} placeholder such as ${HITL_ONCALL_EMAIL} naming the variable that holds the "
            "address or URL; empty for None.",
            "secret_ref": "Webhook only: the ${HITL_…} variable holding its whsec_… signing secret.",
        }
