from django.apps import AppConfig
from django.core import checks

RECEIPT_KEY_CHECK = "approvals.E001"


class ApprovalsConfig(AppConfig):
    name = "approvals"

    def ready(self) -> None:
        from approvals.presenters.notices import notice_for
        from contacts.messages import compose_with

        checks.register(receipt_key_check)
        compose_with(notice_for)  # contacts send notices; how a request reads in one is ours


def receipt_key_check(app_configs, **kwargs) -> list[checks.CheckMessage]:
    """`manage.py check` (and so migrate, the server, the cluster) refuses a missing or malformed receipt key."""
    from django.core.exceptions import ImproperlyConfigured

    from approvals.receipts.keys import receipt_keys

    try:
        receipt_keys()
    except ImproperlyConfigured as error:
        return [checks.Error(str(error), id=RECEIPT_KEY_CHECK)]
    return []
