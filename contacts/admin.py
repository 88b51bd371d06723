from django.contrib import admin

from .models import Contact


@admin.register(Contact)
class ContactAdmin(admin.ModelAdmin):
    list_display = ["name", "public_id", "channel", "channel_ref", "config"]
    list_filter = ["channel", "config__workspace"]
    search_fields = ["name", "public_id", "channel_ref", "config__public_id"]
    readonly_fields = ["public_id"]
