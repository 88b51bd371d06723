from django.http import HttpRequest

from .access import current_membership


def workspace(request: HttpRequest) -> dict:
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    membership = current_membership(request)
    return {
        "membership": membership,
        "memberships": getattr(request, "hitl_memberships", []),
        "workspace": membership.workspace if membership else None,
    }
