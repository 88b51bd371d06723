"""The floor: minimal DRF views doing only the database work a registration or a poll cannot avoid.

They run in the portal's process, behind the same middleware, with the same Bearer authentication
and engine permission (one token lookup) as the real endpoints: the auth cost is *included* on both
sides, so the ratio measures what the portal adds beyond auth + one INSERT / one indexed SELECT.
"""

import json

from django.db import connection
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from hitl_portal.ids import new_public_id
from workspaces.permissions import IsEngine

FLOOR_TABLE_SQL = """
CREATE TABLE IF NOT EXISTS bench_floor_request (
    id bigserial PRIMARY KEY,
    public_id varchar(24) NOT NULL UNIQUE,
    workspace_id bigint NOT NULL,
    body jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
)
"""


class FloorRegisterView(APIView):
    """One INSERT of the parsed body; answers 201 with the new id."""

    permission_classes = [IsEngine]
    schema = None

    def post(self, request):
        public_id = new_public_id("apr")
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO bench_floor_request (public_id, workspace_id, body) VALUES (%s, %s, %s)",
                [public_id, request.actor.workspace.pk, json.dumps(request.data)],
            )
        return Response({"id": public_id, "status": "pending"}, status=201)


class FloorPollView(APIView):
    """One SELECT of a request by its unique public id (an index lookup, like the primary key's) in the big table."""

    permission_classes = [IsEngine]
    schema = None

    def get(self, request, apr: str):
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT public_id, status, expires_at FROM approvals_approvalrequest"
                " WHERE public_id = %s AND workspace_id = %s",
                [apr, request.actor.workspace.pk],
            )
            row = cursor.fetchone()
        if row is None:
            raise NotFound("No such request.")
        return Response({"id": row[0], "status": row[1], "expires_at": row[2]})
