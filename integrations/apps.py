from django.apps import AppConfig


class IntegrationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "integrations"
    verbose_name = "Integrations (Slack)"

    def ready(self) -> None:
        from approvals import extensions
        from collaboration.signals import claim_changed
        from contacts.transports import transport_add
        from integrations import slack_transport, telegram_transport
        from integrations.chat_claims import queue_cards_refresh
        from integrations.passkey_notices import queue_passkey_notice
        from integrations.requester_notices import queue_requester_notices
        from passkeys.signals import passkey_changed

        transport_add("slack", slack_transport.TRANSPORT)
        transport_add("telegram", telegram_transport.TRANSPORT)
        passkey_changed.connect(queue_passkey_notice, dispatch_uid="integrations.passkey_notices")
        claim_changed.connect(queue_cards_refresh, dispatch_uid="integrations.chat_claims")
        extensions.extend(extensions.Hooks(ended=queue_requester_notices))
