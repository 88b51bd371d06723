from django.apps import AppConfig


class CollaborationConfig(AppConfig):
    name = "collaboration"

    def ready(self) -> None:
        from approvals import extensions
        from collaboration import hooks

        extensions.extend(hooks.HOOKS)
