from django.apps import AppConfig


class ContactsConfig(AppConfig):
    name = "contacts"

    def ready(self) -> None:
        from contacts.transports import email, transport_add, webhook

        transport_add("email", email.TRANSPORT)
        transport_add("webhook", webhook.TRANSPORT)
