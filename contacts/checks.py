"""HITL_BASE_URL is needed for links once anything may be sent: refuse to start without it."""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

MESSAGE = (
    "HITL_BASE_URL is not set, and contacts exist: notifications carry links to the portal. "
    "Set HITL_BASE_URL to the portal's public address, such as https://hitl.example.com"
)


def base_url_missing() -> bool:
    from .models import Contact

    return not settings.HITL_BASE_URL and not settings.DEBUG and Contact.objects.exists()


def require_base_url() -> None:
    """Called at startup by the web server (wsgi/asgi) and by the sender: fail with a message, not at send time."""
    if base_url_missing():
        raise ImproperlyConfigured(MESSAGE)
