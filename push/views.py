"""The installable portal: its web app manifest, its service worker, the page shown offline, and
the account page's Web Push section.

The service worker's code is static/js/sw.js; it is served from /hitl/sw.js (not /static/…) so
that its scope is /hitl/, every page of the portal a reviewer works in. It never keeps a page: a
navigation goes to the network, and only when that fails is the offline page shown — never a
request's page or the Approvals tab as they once were, whose buttons would decide on stale facts.
"""

from django.contrib.staticfiles import finders
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from . import vapid
from .models import PushSubscription

SW_SCOPE = "/hitl/"


@require_safe
def manifest(request: HttpRequest) -> JsonResponse:
    """The web app manifest: what a phone installs (W3C Web Application Manifest)."""
    icons = [
        {"src": static("icons/icon-192.png"), "sizes": "192x192", "type": "image/png", "purpose": "any"},
        {"src": static("icons/icon-512.png"), "sizes": "512x512", "type": "image/png", "purpose": "any"},
        {"src": static("icons/maskable-512.png"), "sizes": "512x512", "type": "image/png", "purpose": "maskable"},
    ]
    body = {
        "id": SW_SCOPE,
        "name": "HITL Portal",
        "short_name": "HITL",
        "description": "Approve or reject what AI agents ask to do.",
        "start_url": reverse("approvals:queue"),
        "scope": SW_SCOPE,
        "display": "standalone",
        "background_color": "#ffffff",
        "theme_color": "#1f3a8a",
        "icons": icons,
    }
    response = JsonResponse(body, json_dumps_params={"indent": 2})
    response["Content-Type"] = "application/manifest+json"
    return response


@require_safe
@never_cache  # a browser checks for a new worker on every visit; a cached one would linger for a day
def service_worker(request: HttpRequest) -> HttpResponse:
    path = finders.find("js/sw.js")
    if path is None:
        raise Http404("No service worker")
    with open(path, "rb") as code:
        response = HttpResponse(code.read(), content_type="text/javascript; charset=utf-8")
    response["Service-Worker-Allowed"] = SW_SCOPE
    return response


@require_safe
def offline(request: HttpRequest) -> HttpResponse:
    """What the service worker shows when the network is gone: nobody's data, no form, no token —
    the worker keeps it, so it must be the same page for everyone."""
    response = render(request, "push/offline.html", {"queue_url": reverse("approvals:queue")})
    response["Cache-Control"] = "no-cache"
    return response


def account_section(request: HttpRequest) -> dict:
    """The account page's Web Push section (templates/push/_account.html): this person's browsers."""
    subscriptions = PushSubscription.objects.filter(workspace=request.actor.workspace, user=request.user)
    return {
        "template": "push/_account.html",
        "push_public_key": vapid.public_key() or "",
        "push_subscriptions": list(subscriptions),
        "push_api_url": reverse("api-push-subscriptions"),
    }
