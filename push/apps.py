from django.apps import AppConfig


class PushConfig(AppConfig):
    name = "push"
    verbose_name = "Web Push"

    def ready(self) -> None:
        from contacts.transports import transport_add
        from push.transport import TRANSPORT

        transport_add("push", TRANSPORT)
