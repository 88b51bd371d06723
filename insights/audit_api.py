"""GET /api/v1/audit: the workspace's audit log as JSONL or CSV, streamed oldest first (admins)."""

import csv
import io
from collections.abc import Iterable, Iterator

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from audit.chain import canonical
from audit.selectors import FIELDS, audit_head, audit_records
from audit.services import audit_seal
from common.errors import ErrorSerializer
from common.query import QuerySerializer
from workspaces.permissions import IsAdmin

ANCHOR_HEADER = "Audit-Chain-Head"
MEDIA_TYPES = {"jsonl": "application/x-ndjson", "csv": "text/csv"}


class AuditQuerySerializer(QuerySerializer):
    since = serializers.DateTimeField(required=False, help_text="Records at or after this time (ISO 8601).")
    until = serializers.DateTimeField(required=False, help_text="Records before this time (ISO 8601).")
    format = serializers.ChoiceField(choices=list(MEDIA_TYPES), default="jsonl")

    def validate(self, attrs: dict) -> dict:
        if attrs.get("since") and attrs.get("until") and attrs["since"] >= attrs["until"]:
            raise serializers.ValidationError({"until": "until must be later than since."})
        return attrs


def jsonl_lines(records: Iterable[dict]) -> Iterator[str]:
    for record in records:
        yield canonical(record) + "\n"


class _Line:
    def write(self, value: str) -> str:
        return value


# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection): such a cell
# is written with a leading apostrophe, as is one that already starts with an apostrophe, so
# dropping one leading apostrophe gives the value back exactly (docs/api.md, Audit).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def csv_cell(value: object) -> object:
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_lines(records: Iterable[dict]) -> Iterator[str]:
    writer = csv.writer(_Line())
    yield writer.writerow(FIELDS)
    for record in records:
        yield writer.writerow([csv_cell(canonical(record["data"]) if f == "data" else record[f]) for f in FIELDS])


def _chunks(lines: Iterator[str], size: int = 64 * 1024) -> Iterator[bytes]:
    # One write per line would be a syscall per record: gather about 64 KiB at a time.
    buffer = io.StringIO()
    for line in lines:
        buffer.write(line)
        if buffer.tell() >= size:
            yield buffer.getvalue().encode()
            buffer = io.StringIO()
    if buffer.tell():
        yield buffer.getvalue().encode()


AUDIT_RESPONSES = {
    (200, "application/x-ndjson"): OpenApiResponse(
        OpenApiTypes.STR,
        description="One JSON record per line (format=jsonl): seq, at, actor, action, object, data, prev_hash, hash.",
    ),
    (200, "text/csv"): OpenApiResponse(
        OpenApiTypes.STR,
        description=(
            "format=csv: a header row, then one row per record (data as JSON). A cell starting with "
            "= + - @ ' or a tab or carriage return is written with one leading apostrophe (so no spreadsheet "
            "runs it as a formula); drop it to get the value back."
        ),
    ),
    400: OpenApiResponse(
        ErrorSerializer,
        description="A since/until that is not an ISO 8601 time, an until not later than since, or a bad format.",
    ),
    401: OpenApiResponse(ErrorSerializer, description="No token, or an unknown or revoked one."),
    403: OpenApiResponse(ErrorSerializer, description="Only a workspace admin may export the audit log."),
}


class AuditExportView(APIView):
    permission_classes = [IsAdmin]

    def perform_content_negotiation(self, request: Request, force: bool = False) -> tuple[JSONRenderer, str]:
        # `format` picks the export's shape here, not a DRF renderer: errors are always JSON.
        return JSONRenderer(), JSONRenderer.media_type

    @extend_schema(
        tags=["Audit"],
        summary="Export the audit log",
        description=(
            "The workspace's audit records, oldest first, streamed. `hash` is the hex SHA-256 of the UTF-8 of "
            "`prev_hash` + the canonical JSON (sorted keys, no spaces, non-ASCII as is) of the record without `hash`; "
            "`at` is `YYYY-MM-DDTHH:MM:SS.ffffffZ`; the first record's `prev_hash` is 64 zeros. The "
            "`Audit-Chain-Head` header gives the chain's end when the download began, `SEQ:HASH`: keep it, and "
            "`hitl audit verify --anchor SEQ:HASH` later proves the log still holds that record unchanged. "
            "`until` must be later than `since` when both are given: an equal or earlier `until` is a 400 naming it "
            "(a range the schema cannot state)."
        ),
        parameters=[
            OpenApiParameter("since", OpenApiTypes.DATETIME, description="Records at or after this time."),
            OpenApiParameter(
                "until", OpenApiTypes.DATETIME, description="Records before this time; later than `since`."
            ),
            OpenApiParameter("format", OpenApiTypes.STR, enum=list(MEDIA_TYPES), default="jsonl"),
            OpenApiParameter(
                ANCHOR_HEADER,
                OpenApiTypes.STR,
                location=OpenApiParameter.HEADER,
                response=[200],
                description="The sealed chain's end when the download began, `SEQ:HASH` (0 and 64 zeros if empty).",
            ),
        ],
        responses=AUDIT_RESPONSES,
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        query = AuditQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        shape = query.validated_data["format"]
        audit_seal(workspace_id=request.actor.workspace.pk)  # records appended moments ago too
        records = audit_records(
            workspace_id=request.actor.workspace.pk,
            since=query.validated_data.get("since"),
            until=query.validated_data.get("until"),
        )
        lines = jsonl_lines(records) if shape == "jsonl" else csv_lines(records)
        response = StreamingHttpResponse(_chunks(lines), content_type=MEDIA_TYPES[shape] + "; charset=utf-8")
        seq, hash_ = audit_head(workspace_id=request.actor.workspace.pk)
        response[ANCHOR_HEADER] = f"{seq}:{hash_}"
        filename = f"audit-{request.actor.workspace.slug}.{shape}"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
