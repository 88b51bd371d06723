"""Query parameters, read the same way by every endpoint that takes them (docs/api.md, Conventions).

DRF reads a parameter sent blank (`?config=`) as one not sent at all, so `GET /api/v1/approvals?config=`
listed every config's requests: a client that built the URL from an empty variable got an answer to a
question it did not ask. Here a parameter an endpoint declares, sent blank, is a 400 that names it and
says what it takes. Parameters an endpoint does not declare are ignored (a cache-buster like `_=…`
must not break a call), blank or not.
"""

from collections.abc import Mapping

from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.fields import empty

from .fields import FieldsBoundOnce


def refuse_blank(query: Mapping, expects: Mapping[str, str]) -> None:
    """400 naming each parameter of `expects` (name → what it takes) that `query` carries blank.

    Every value counts (`?status=pending&status=`): the one DRF would read is the last.
    """
    blank = {
        name: f"{name} is blank: send {what}, or leave {name} out."
        for name, what in expects.items()
        if name in query and any(value == "" for value in _values(query, name))
    }
    if blank:
        raise ValidationError(blank)


def _values(query: Mapping, name: str) -> list:
    return query.getlist(name) if hasattr(query, "getlist") else [query[name]]


def expectation(field: serializers.Field) -> str:
    """What a query field takes, in words: what its type says, else its help text (an id's prefix)."""
    if isinstance(field, serializers.ChoiceField):
        return "one of " + ", ".join(str(choice) for choice in field.choices)
    if isinstance(field, serializers.BooleanField):
        return "true or false"
    if isinstance(field, serializers.DateTimeField):
        return "an ISO 8601 time"
    if isinstance(field, (serializers.IntegerField, serializers.FloatField)):
        return f"a number from {field.min_value} to {field.max_value}"
    return str(field.help_text or "a value")


class QuerySerializer(FieldsBoundOnce):
    """The base of every endpoint's query serializer: its fields sent blank are refused (refuse_blank).

    Its fields are bound once per class: a long-poll's `?wait` is read on every wait an engine opens.
    """

    def to_internal_value(self, data):
        refuse_blank(data, {name: expectation(field) for name, field in self.fields.items()})
        return super().to_internal_value(data)


class QueryBooleanField(serializers.BooleanField):
    """`true` or `false`, as a query writes the schema's boolean, and nothing else.

    DRF's BooleanField also reads `null` as None (so `?active=null` listed every grant) and `1`, `yes`,
    `on`, `T` as true: spellings no client of this API is told about, each one an input the schema calls
    invalid and the server took.
    """

    default_error_messages = {"invalid": "{name} must be true or false."}
    default_empty_html = empty  # left out is not sent (DRF's BooleanField reads an absent form field as false)

    def to_internal_value(self, data) -> bool:
        if data in ("true", "false"):
            return data == "true"
        self.fail("invalid", name=self.field_name)
