from django.contrib import admin

from .models import SlackMessage


@admin.register(SlackMessage)
class SlackMessageAdmin(admin.ModelAdmin):
    list_display = ["approval", "channel", "ts", "shown_status", "created_at", "updated_at"]
    readonly_fields = ["approval", "contact_id", "channel", "ts", "shown_status", "created_at", "updated_at"]
