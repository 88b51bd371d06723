from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from .models import Membership


@login_required
@require_POST
def switch(request: HttpRequest) -> HttpResponse:
    """Work in another of the user's workspaces."""
    membership = Membership.objects.filter(user=request.user, workspace__slug=request.POST.get("workspace")).first()
    if membership is None:
        raise Http404("No such workspace")
    request.session["workspace_id"] = membership.workspace_id
    return redirect("home")
