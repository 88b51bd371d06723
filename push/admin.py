from django.contrib import admin

from .models import PushSubscription


@admin.register(PushSubscription)
class PushSubscriptionAdmin(admin.ModelAdmin):
    """For removing a browser a person lost; the keys are the browser's public ones, shown for what they are."""

    list_display = ["public_id", "user", "workspace", "user_agent", "created_at"]
    list_filter = ["workspace"]
    search_fields = ["public_id", "user__email"]
    readonly_fields = ["public_id", "workspace", "user", "endpoint", "p256dh", "auth", "user_agent", "created_at"]

    def has_add_permission(self, request) -> bool:
        return False  # only a browser can subscribe itself
