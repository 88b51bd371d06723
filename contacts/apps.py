from django.apps import AppConfig


class ContactsConfig(AppConfig):
    name = "contacts"

    def ready(self) -> None:
        from . import checks  # noqa: F401  (registers the HITL_BASE_URL system check)
