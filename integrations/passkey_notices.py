"""Telling a person their passkeys changed, on every channel they set up (django-q2, queued on
passkeys.signals.passkey_changed: passkeys sit below the channels that tell people, docs/modules.md)."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.urls import reverse
from django_q.tasks import async_task

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


def queue_passkey_notice(sender: object, *, user_id: int, change: str, name: str, **kwargs: object) -> None:
    """passkeys.signals.passkey_changed's receiver (IntegrationsConfig.ready): the notice, on the cluster."""
    async_task("integrations.passkey_notices.passkey_changed_notify", user_id, change, name)
