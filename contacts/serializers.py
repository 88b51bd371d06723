"""Contacts in the admin API: their input (a contact as `Contact.frozen()` gives it is a version's, and so
rules.serializers.ContactSerializer)."""

from rest_framework import serializers

from common.fields import JsonInput
from rules.serializers import channel_field


class ContactInputSerializer(JsonInput):
    """POST needs a name; PATCH takes any subset. Contact.clean() judges the channel reference."""

    name = serializers.CharField(max_length=200)
    channel = channel_field(required=False)
    channel_ref = serializers.CharField(max_length=200, allow_blank=True, allow_null=True, required=False)

    secret_ref = serializers.CharField(max_length=200, allow_blank=True, allow_null=True, required=False)

    def validate_channel_ref(self, value: str | None) -> str:
        return value or ""

    def validate_secret_ref(self, value: str | None) -> str:
        return value or ""


class ContactCreateSerializer(ContactInputSerializer):
    """POST: a new contact needs its channel too, and the schema says so (a PATCH may leave it out)."""

    channel = channel_field(
        required_message="A new contact needs its channel: email, slack, webhook, push, telegram or none."
    )
