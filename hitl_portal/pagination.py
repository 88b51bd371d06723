from rest_framework import pagination
from rest_framework.response import Response


class CursorPagination(pagination.CursorPagination):
    """API.md: {"results": [...], "next": "<url or null>"}; no COUNT(*) over the table."""

    ordering = "-created_at"
    page_size_query_param = "limit"
    max_page_size = 200

    def get_paginated_response(self, data) -> Response:
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
