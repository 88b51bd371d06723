from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from approvals.halts.services import workspace_frozen
from workspaces.access import current_membership


def halting(request: HttpRequest) -> dict:
    """`frozen`: the freeze in force in the workspace this session works in (every page's banner), or None.

    Lazy: read only by a page that shows the banner (base.html), never by the queue's htmx partials.
    """
    if not getattr(request, "user", None) or not request.user.is_authenticated:
        return {}
    membership = current_membership(request)  # cached on the request: the workspace processor read it
    if membership is None:
        return {}
    return {"frozen": SimpleLazyObject(lambda: workspace_frozen(membership.workspace))}
