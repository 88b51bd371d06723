"""The Django floor's views: minimal DRF views doing only the database work a registration or a poll cannot avoid.

Served apart from the portal (bench/floor_settings.py: one middleware; gunicorn gthread 3 × 4,
bench/floors.py), with **no authentication and no permission** — no token lookup: the ratio
measures everything the portal adds to one INSERT / one indexed SELECT, authentication included.
"""

import json

from django.db import connection
from rest_framework.exceptions import NotFound
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from common.ids import new_public_id

FLOOR_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS bench_floor_request (
    id bigserial PRIMARY KEY,
    public_id varchar(24) NOT NULL UNIQUE,
    workspace_id bigint NOT NULL,
    body jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
)
"""


class FloorView(APIView):
    authentication_classes = []
    permission_classes = [AllowAny]
    schema = None


class FloorRegisterView(FloorView):
    """One INSERT of the parsed body; answers 201 with the new id."""

    def post(self, request):
        public_id = new_public_id("apr")
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO bench_floor_request (public_id, workspace_id, body) VALUES (%s, %s, %s)",
                [public_id, 0, json.dumps(request.data)],  # no auth, no workspace: the column is still written
            )
        return Response({"id": public_id, "status": "pending"}, status=201)


class FloorPollView(FloorView):
    """One SELECT of a request by its unique public id (an index lookup, like the primary key's) in the big table."""

    def get(self, request, apr: str):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT public_id, status, expires_at FROM approvals_approvalrequest WHERE public_id = %s",
                [apr],
            )
            row = cursor.fetchone()
        if row is None:
            raise NotFound("No such request.")
        return Response({"id": row[0], "status": row[1], "expires_at": row[2]})
