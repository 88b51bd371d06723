import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework import pagination, serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

if TYPE_CHECKING:  # DRF imports this module (settings) while importing its views: no import of them here
    from rest_framework.views import APIView

from .query import refuse_blank

MAX_PAGE_SIZE = 200
CURSOR_PATTERN = re.compile(r"[A-Za-z0-9+/=_-]+")

# Every list declares its paging the same way: a generated client's `cursor=` argument takes
# `next_cursor`, and `next` is the same page as a URL to GET as it is.
PAGE_PARAMETERS = [
    OpenApiParameter(
        "cursor",
        {"type": "string", "minLength": 1, "pattern": f"^{CURSOR_PATTERN.pattern}$"},
        description="The previous page's `next_cursor`, as it is. (`next` is the same page as a whole URL: "
        "GET it instead of passing it here.) A cursor this server did not write is a 400.",
    ),
    OpenApiParameter(
        "limit",
        {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE},
        description=f"Items per page (default 50, at most {MAX_PAGE_SIZE}).",
    ),
]


def page_serializer(item: serializers.Serializer, name: str) -> type[serializers.Serializer]:
    """The documented shape of every list: {"results": [...], "next": url or null, "next_cursor": str or null}."""
    fields = {
        "results": item,
        "next": serializers.URLField(
            allow_null=True, help_text="The next page as a URL to GET as it is; null on the last page."
        ),
        "next_cursor": serializers.CharField(
            allow_null=True, help_text="The next page as the `cursor` parameter takes it; null on the last page."
        ),
    }
    return type(name, (serializers.Serializer,), fields)


def cursor_refused(raw: str) -> ValidationError:
    """The 400 for a cursor this server did not write; a whole `next` URL passed as the cursor is told apart."""
    if raw.lower().startswith(("http://", "https://", "/")) or "cursor=" in raw:
        problem = "cursor is the whole `next` URL: GET that URL as it is, or pass the page's `next_cursor` as cursor."
    else:
        problem = "cursor is not one this server wrote: pass the previous page's `next_cursor` as it is."
    return ValidationError({"cursor": problem})


def cursor_of(next_url: str | None) -> str | None:
    """The `cursor` parameter a `next` URL carries (what a generated client's `cursor=` takes)."""
    if not next_url:
        return None
    return parse_qs(urlsplit(next_url).query).get("cursor", [None])[0]


class CursorPagination(pagination.CursorPagination):
    """docs/api.md: {"results": [...], "next": "<url or null>", "next_cursor": …}; no COUNT(*) over the table.

    The cursor is client input: base64 that decodes to `p=abc` for an integer ordering, to a
    datetime PostgreSQL cannot hold (`9999-12-31T23:59:59-23:59` is past year 9999 in UTC), or to
    a NUL byte for a text one, answers 400 naming `cursor` — never a 500 from the database.
    """

    ordering = "-created_at"
    page_size_query_param = "limit"
    max_page_size = MAX_PAGE_SIZE

    def get_page_size(self, request: Request) -> int:
        """`limit` as the schema declares it (an integer, 1–200): anything else is a 400, not silently ignored.

        Every list reads its page size here (the approvals list too), so this is where a blank `cursor` or
        `limit` is refused: DRF would read `?cursor=` as the first page.
        """
        refuse_blank(
            request.query_params,
            {
                self.cursor_query_param: "the previous page's `next_cursor` as it is",
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
        raw = request.query_params.get(self.cursor_query_param, "")
        if raw and not CURSOR_PATTERN.fullmatch(raw):
            raise cursor_refused(raw)  # base64 decoding would skip the stray characters and read on
        try:
            cursor = super().decode_cursor(request)
        except NotFound:
            raise cursor_refused(raw) from None
        if cursor is not None and cursor == pagination.Cursor(offset=0, reverse=False, position=None):
            raise cursor_refused(raw)  # decodes to nothing: DRF would answer the first page, a cursor never does
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
                raise cursor_refused(raw) from None
        return cursor

    def get_paginated_response(self, data: list) -> Response:
        next_url = self.get_next_link()
        return Response({"results": data, "next": next_url, "next_cursor": cursor_of(next_url)})

    def get_paginated_response_schema(self, schema: dict) -> dict:
        return {
            "type": "object",
            "required": ["results", "next", "next_cursor"],
            "properties": {
                "results": schema,
                "next": {"type": "string", "nullable": True, "format": "uri"},
                "next_cursor": {"type": "string", "nullable": True},
            },
        }
