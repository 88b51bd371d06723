"""`/api/v1/approvals` serves two audiences on one path: engines POST, reviewers GET."""

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from approvals.engine import api as api_engine
from approvals.review import api as api_reviewer
from workspaces.permissions import IsEngineOrReviewer


class ApprovalCollectionView(APIView):
    permission_classes = [IsEngineOrReviewer]

    @api_reviewer.LIST_SCHEMA
    def get(self, request: Request) -> Response:
        return api_reviewer.list_approvals(request)

    @api_engine.registration_schema
    def post(self, request: Request) -> Response:
        return api_engine.register_approval(request)
