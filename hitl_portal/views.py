from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render

from .errors import json_error


@login_required
def home(request):
    return redirect("approvals:queue")


def not_found(request, exception=None):
    if request.path.startswith("/api/"):
        return json_error("not_found", "Not found: no such endpoint or object.", 404)
    return render(request, "404.html", status=404)


def server_error(request):
    if request.path.startswith("/api/"):
        return json_error("server_error", "Something went wrong on our side; it has been logged.", 500)
    return render(request, "500.html", status=500)
