from django.http import HttpRequest

from workspaces.access import current_membership

from .halts import workspace_frozen


def halting(request: HttpRequest) -> dict:
    """`frozen`: the freeze in force in the workspace this session works in (every page's banner), or None."""
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    membership = current_membership(request)  # cached on the request: the workspace processor read it
    if membership is None:
        return {}
    return {"frozen": workspace_frozen(membership.workspace)}
