"""A chat's delivery acted on once: Slack retries an event and Telegram an update until it is answered,
and a signed delivery can be replayed. Each is recorded by its id in a row of its own (the database
refuses a second), and rows older than the chat would ever resend are dropped as new ones come."""

from datetime import timedelta

from django.db import IntegrityError, models, transaction
from django.utils import timezone


def first_time(seen: type[models.Model], remember: timedelta, **key) -> bool:
    """Record the delivery `key` names in `seen` (a model with `received_at`); False if it came before."""
    now = timezone.now()
    try:
        with transaction.atomic():
            seen.objects.create(received_at=now, **key)
    except IntegrityError:
        return False
    seen.objects.filter(received_at__lt=now - remember).delete()
    return True
