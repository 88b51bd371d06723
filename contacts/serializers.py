"""Contacts in the admin API: a contact as `Contact.frozen()` gives it, and its input."""

from rest_framework import serializers

from common.fields import JsonInput

from .models import Channel


def _channel(required_message: str = "", **kwargs) -> serializers.ChoiceField:
    values = ", ".join(Channel.values)
    messages = {"invalid_choice": f'"{{input}}" is not one of: {values}.'}
    if required_message:
        messages["required"] = required_message
    return serializers.ChoiceField(choices=Channel.choices, error_messages=messages, **kwargs)


class ContactSerializer(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    channel = _channel()
    channel_ref = serializers.CharField(allow_blank=True)
    secret_ref = serializers.CharField(allow_blank=True)  # older versions: filled in as they load


class ContactInputSerializer(JsonInput):
    """POST needs a name; PATCH takes any subset. Contact.clean() judges the channel reference."""

    name = serializers.CharField(max_length=200)
    channel = _channel(required=False)
    channel_ref = serializers.CharField(max_length=200, allow_blank=True, allow_null=True, required=False)

    secret_ref = serializers.CharField(max_length=200, allow_blank=True, allow_null=True, required=False)

    def validate_channel_ref(self, value: str | None) -> str:
        return value or ""

    def validate_secret_ref(self, value: str | None) -> str:
        return value or ""


class ContactCreateSerializer(ContactInputSerializer):
    """POST: a new contact needs its channel too, and the schema says so (a PATCH may leave it out)."""

    channel = _channel(
        required_message="A new contact needs its channel: email, slack, webhook, push, telegram or none."
    )
