"""Engine endpoints (API.md, Engines): served config, registration, long-poll read, outcome."""

from rest_framework.exceptions import APIException


class NotBuiltYet(APIException):
    status_code = 501
    default_code = "not_implemented"


def register_approval(request):
    raise NotBuiltYet("Registration is being built (issue 3).")
