from datetime import UTC, datetime
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from rest_framework import pagination
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

if TYPE_CHECKING:  # DRF imports this module (settings) while importing its views: no import of them here
    from rest_framework.views import APIView

from .query import refuse_blank


class CursorPagination(pagination.CursorPagination):
    """docs/api.md: {"results": [...], "next": "<url or null>"}; no COUNT(*) over the table.

    The cursor is client input: base64 that decodes to `p=abc` for an integer ordering, to a
    datetime PostgreSQL cannot hold (`9999-12-31T23:59:59-23:59` is past year 9999 in UTC), or to
    a NUL byte for a text one, answers 404 "Invalid cursor" — never a 500 from the database.
    """

    ordering = "-created_at"
    page_size_query_param = "limit"
    max_page_size = 200

    def get_page_size(self, request: Request) -> int:
        """`limit` as the schema declares it (an integer, 1–200): anything else is a 400, not silently ignored.

        Every list reads its page size here (the approvals list too), so this is where a blank `cursor` or
        `limit` is refused: DRF would read `?cursor=` as the first page.
        """
        refuse_blank(
            request.query_params,
            {
                self.cursor_query_param: "the `next` of the previous page as it is",
                self.page_size_query_param: f"a whole number from 1 to {self.max_page_size}",
            },
        )
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        if not raw.isdigit() or not 1 <= int(raw) <= self.max_page_size:
            raise ValidationError({"limit": f"limit must be a whole number from 1 to {self.max_page_size}."})
        return int(raw)

    def paginate_queryset(self, queryset: QuerySet, request: Request, view: "APIView | None" = None) -> list:
        self._model = queryset.model
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request: Request) -> pagination.Cursor | None:
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None:
            ordering = self.ordering if isinstance(self.ordering, str) else self.ordering[0]
            field = self._model._meta.get_field(ordering.lstrip("-"))
            try:
                if "\x00" in cursor.position:
                    raise ValueError("NUL in a cursor")
                value = field.to_python(cursor.position)
                if isinstance(value, datetime):
                    value.astimezone(UTC)  # overflows for a moment outside years 1-9999 in UTC
                field.get_prep_value(value)
            except (ValueError, TypeError, OverflowError, DjangoValidationError):
                raise NotFound(self.invalid_cursor_message) from None
        return cursor

    def get_paginated_response(self, data: list) -> Response:
        return Response({"results": data, "next": self.get_next_link()})

    def get_paginated_response_schema(self, schema: dict) -> dict:
        return {
            "type": "object",
            "required": ["results", "next"],
            "properties": {
                "results": schema,
                "next": {"type": "string", "nullable": True, "format": "uri"},
            },
        }
