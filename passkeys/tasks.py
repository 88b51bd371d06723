"""Background work of passkeys (django-q2): telling the person their passkeys changed."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse

from integrations.personal import Notice, person_tell

CHANGES = {
    "registered": "A passkey was added to your HITL Portal account",
    "removed": "A passkey was removed from your HITL Portal account",
}


def passkey_changed_notify(user_id: int, change: str, name: str) -> list[str]:
    """Tell the person on every channel they set up; safe to run twice (a second notice, nothing more)."""
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        return []
    subject = CHANGES[change]
    text = (
        f"{subject}: “{name}”. If this was not you, sign in, remove it on your account page, change your "
        "password, and tell your workspace's admins."
    )
    return person_tell(user=user, notice=Notice(subject, text, settings.HITL_BASE_URL + reverse("account")))
