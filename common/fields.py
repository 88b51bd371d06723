"""Serializer fields that take JSON types as they are: an engine that sends 42 for a name has a bug to hear about."""

from functools import cache

from rest_framework import serializers
from rest_framework.utils.serializer_helpers import BindingDict


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


class JsonInput(serializers.Serializer):
    """The base of every JSON request body: each declared field takes its JSON type as it is, or the body is a 400.

    DRF turns 0 into "0" for a CharField, "true" and 1 into True for a BooleanField and "3" or 3.0 into 3
    for an IntegerField, so `{"name": 0}` created a config called "0": the client's bug went unheard and
    the server did not do what the schema says (schemathesis' negative_data_rejection found it). Checked
    here once per body, before DRF reads it; StrictCharField and StrictIntegerField do the same field by
    field where a body skips the serializer (the engine's fast path).
    """

    def to_internal_value(self, data):
        if isinstance(data, dict):
            errors = {
                name: [problem]
                for name, field in self.fields.items()
                if not field.read_only and name in data and (problem := json_type_problem(field, data[name]))
            }
            if errors:
                raise serializers.ValidationError(errors)
        return super().to_internal_value(data)


def json_type_problem(field: serializers.Field, value: object) -> str | None:
    """What is wrong with `value`'s JSON type for `field` ("order must be an integer."), or None.

    null is left to the field (its allow_null decides); so are nested serializers and other field types.
    """
    if value is None:
        return None
    name = field.field_name
    if isinstance(field, serializers.ListField):
        if not isinstance(value, list):
            return f"{name} must be a list."
        wanted = _json_type(field.child)
        if wanted and not all(item is not None and _is(wanted, item) for item in value):
            return f"{name} must be a list of {_PLURALS[wanted]}."
        return None
    wanted = _json_type(field)
    return f"{name} must be {wanted}." if wanted and not _is(wanted, value) else None


_PLURALS = {
    "a string": "strings",
    "true or false": "true or false values",
    "an integer": "integers",
    "a number": "numbers",
}


def _json_type(field: serializers.Field) -> str | None:
    if isinstance(field, serializers.BooleanField):
        return "true or false"
    if isinstance(field, serializers.IntegerField):
        return "an integer"
    if isinstance(field, serializers.FloatField):
        return "a number"
    if isinstance(field, serializers.CharField):
        return "a string"
    if isinstance(field, serializers.ChoiceField) and all(isinstance(choice, str) for choice in field.choices):
        return "a string"
    return None


def _is(wanted: str, value: object) -> bool:
    if isinstance(value, bool):
        return wanted == "true or false"
    if wanted == "an integer":
        return isinstance(value, int)
    if wanted == "a number":
        return isinstance(value, int | float)
    return isinstance(value, str) if wanted == "a string" else isinstance(value, bool)


class FieldsBoundOnce(serializers.Serializer):
    """A serializer whose fields are copied from the declared ones and bound once per class, not per instance.

    DRF deep-copies every declared field for each instance it validates with: on the engines'
    registration, that copy cost more than the validation itself (docs/performance.md). Validating
    reads a field and never changes it, so instances can share one set — bound to a template
    instance of the class, whose `context` is empty and which is never partial. Only for a
    serializer whose fields depend on nothing an instance is given (no context, no instance, no
    partial, no fields added or removed per instance); its `validate_*` methods still run on the
    instance validating.
    """

    @property
    def fields(self) -> BindingDict:
        return _bound_once(type(self))


@cache
def _bound_once(cls: type[FieldsBoundOnce]) -> BindingDict:
    template = cls()
    fields = BindingDict(template)
    for name, field in template.get_fields().items():
        fields[name] = field
    return fields
