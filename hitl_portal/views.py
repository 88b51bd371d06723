from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.views.decorators.csrf import csrf_exempt

from common.errors import json_error


@login_required
def home(request: HttpRequest) -> HttpResponse:
    return redirect("approvals:queue")


def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever the page says; the icon is a static SVG."""
    return redirect(static("favicon.svg"), permanent=True)


@csrf_exempt  # nothing is changed here: a POST to no endpoint is a 404, not a CSRF refusal
def not_found(request: HttpRequest, exception: Exception | None = None, **path_parts: str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return json_error("not_found", "Not found: no such endpoint or object.", 404)
    return render(request, "404.html", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    if request.path.startswith("/api/"):
        return json_error("server_error", "Something went wrong on our side; it has been logged.", 500)
    return render(request, "500.html", status=500)
