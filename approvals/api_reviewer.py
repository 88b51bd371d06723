"""Reviewer endpoints (API.md, Reviewers): list requests and decide."""

from rest_framework.exceptions import APIException


class NotBuiltYet(APIException):
    status_code = 501
    default_code = "not_implemented"


def list_approvals(request):
    raise NotBuiltYet("Listing is being built (issue 4).")
