"""Accept a plainly valid body without building a DRF serializer; leave everything else to the serializer.

A serializer deep-copies its declared fields and walks DRF's validation machinery on every request:
on the registration hot path that was a tenth of the request. `SerializerFastPath` reads the same
declared fields once, at import, and checks a body against them with plain comparisons. It only
ever *accepts*: a body it is not sure of — a missing field, a wrong type, a value over a limit, a
`validate_<field>` or `validate()` that raises — returns None, and the caller runs the serializer,
whose error messages stay the only ones clients see. So the serializer remains the one source of
the rules, the schema and the errors; tests/test_fast_path.py holds the fast path to it.
"""

import threading
from collections.abc import Callable
from typing import Any

from django.core import validators
from rest_framework import serializers
from rest_framework.fields import empty
from rest_framework.validators import ProhibitSurrogateCharactersValidator

from .fields import StrictCharField, StrictIntegerField

_INVALID = object()


def _text_check(field: serializers.CharField) -> Callable[[Any], Any]:
    if field.trim_whitespace:
        raise TypeError(f"{field.field_name}: the fast path does not trim; declare trim_whitespace=False")
    max_length, min_length, allow_blank = field.max_length, field.min_length or 0, field.allow_blank

    def check(value):
        if type(value) is not str or (max_length is not None and len(value) > max_length) or len(value) < min_length:
            return _INVALID
        if not value and not allow_blank:
            return _INVALID
        # The CharField validators refuse NUL and lone surrogates; ASCII text holds neither surrogate.
        if "\x00" in value or not (value.isascii() or _encodes(value)):
            return _INVALID
        return value

    return check


def _encodes(value: str) -> bool:
    try:
        value.encode()
    except UnicodeEncodeError:  # a lone surrogate
        return False
    return True


def _integer_check(field: serializers.IntegerField) -> Callable[[Any], Any]:
    low, high = field.min_value, field.max_value

    def check(value):
        if type(value) is not int or (low is not None and value < low) or (high is not None and value > high):
            return _INVALID
        return value

    return check


def _choice_check(field: serializers.ChoiceField) -> Callable[[Any], Any]:
    values = dict(field.choice_strings_to_values)

    def check(value):
        return values.get(value, _INVALID) if type(value) is str else _INVALID

    return check


def _json_check(field: serializers.JSONField) -> Callable[[Any], Any]:
    if field.binary:
        raise TypeError(f"{field.field_name}: the fast path takes parsed JSON, not a binary JSONField")
    return lambda value: value  # the body came from the JSON parser: any value in it is JSON


# Exact classes only: a subclass (EmailField is a CharField) may validate or convert more than we know.
_CHECKS: dict[type, Callable] = {
    serializers.CharField: _text_check,
    StrictCharField: _text_check,
    serializers.IntegerField: _integer_check,
    StrictIntegerField: _integer_check,
    serializers.ChoiceField: _choice_check,
    serializers.JSONField: _json_check,
}
# The validators the checks above stand in for; any other one on a field is one we cannot see.
_KNOWN_VALIDATORS = (
    validators.MaxLengthValidator,
    validators.MinLengthValidator,
    validators.MaxValueValidator,
    validators.MinValueValidator,
    validators.ProhibitNullCharactersValidator,
    ProhibitSurrogateCharactersValidator,
)


def _check_for(field: serializers.Field) -> Callable[[Any], Any]:
    name = field.field_name
    make = _CHECKS.get(type(field))
    if make is None:
        raise TypeError(f"{name}: no fast check for {type(field).__name__}; add one or leave it out")
    if field.source != name or field.default is not empty:
        raise TypeError(f"{name}: the fast path takes fields without a source or a default")
    if not all(isinstance(validator, _KNOWN_VALIDATORS) for validator in field.validators):
        raise TypeError(f"{name}: the fast path cannot run this field's own validators")
    return make(field)


class SerializerFastPath:
    """`validated(body)` is what `serializer_class(data=body).validated_data` would be, or None to ask it."""

    def __init__(self, serializer_class: type[serializers.Serializer]) -> None:
        self.serializer_class = serializer_class
        declared = serializer_class()  # read once for its fields, never used to validate
        if declared.validators:
            raise TypeError(f"{serializer_class.__name__}: the fast path cannot run serializer-level validators")
        self.fields = [
            (name, field.required, field.allow_null, _check_for(field), f"validate_{name}")
            for name, field in declared.fields.items()
            if not field.read_only
        ]
        # validate_<field>() and validate() run on an instance of each thread's own: nothing a
        # method might keep on `self` is ever seen by a request in another thread.
        self._local = threading.local()

    @property
    def serializer(self) -> serializers.Serializer:
        serializer = getattr(self._local, "serializer", None)
        if serializer is None:
            serializer = self._local.serializer = self.serializer_class()
        return serializer

    def validated(self, body: Any) -> dict | None:
        if type(body) is not dict:
            return None
        serializer = self.serializer
        data = {}
        for name, required, allow_null, check, validate_name in self.fields:
            if name not in body:
                if required:
                    return None
                continue
            value = body[name]
            if value is None:
                if not allow_null:
                    return None
            else:
                value = check(value)
                if value is _INVALID:
                    return None
            validate_field = getattr(serializer, validate_name, None)
            if validate_field is not None:
                try:
                    value = validate_field(value)
                except serializers.ValidationError:
                    return None
            data[name] = value
        try:
            return serializer.validate(data)
        except serializers.ValidationError:
            return None
