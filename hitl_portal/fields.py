"""Serializer fields that take JSON types as they are: an engine that sends 42 for a name has a bug to hear about."""

from rest_framework import serializers


class StrictCharField(serializers.CharField):
    """A string and nothing else: DRF would quietly turn 42 into "42", an engine bug we'd rather name."""

    default_error_messages = {"not_a_string": "{field} must be a string."}

    def to_internal_value(self, data: object) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string", field=self.field_name)
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer: not true, not "3", not 3.5."""

    default_error_messages = {"not_an_integer": "{field} must be an integer."}

    def to_internal_value(self, data: object) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("not_an_integer", field=self.field_name)
        return super().to_internal_value(data)
