"""Page guards: the same role rules as the API, for server-rendered views."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .access import actor_for_membership, current_membership

View = Callable[..., HttpResponse]  # a page view


def member_required(view: View) -> View:
    """Any member of the current workspace; sets `request.actor`."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        membership = current_membership(request)
        if membership is None:
            return render(request, "workspaces/no_workspace.html", status=403)
        request.actor = actor_for_membership(membership)
        return view(request, *args, **kwargs)

    return wrapper


def admin_required(view: View) -> View:
    """Admins only: reviewers are refused by the server, not merely shown no buttons."""

    @member_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.actor.is_admin:
            raise PermissionDenied("Only a workspace admin may change this.")
        return view(request, *args, **kwargs)

    return wrapper
