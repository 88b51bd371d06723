from django.contrib import admin

from common.admin_readonly import ReadOnlyAdmin

from .models import Config, ConfigVersion, Rule


class RuleInline(admin.TabularInline):
    model = Rule
    extra = 0
    fields = ["public_id", "order", "kind", "match", "point", "enabled", "message"]
    readonly_fields = ["public_id"]


@admin.register(Config)
class ConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "public_id", "workspace", "pass_information_level", "pinned_version", "created_at"]
    list_filter = ["workspace", "pass_information_level"]
    search_fields = ["name", "public_id", "workspace__slug"]
    readonly_fields = ["public_id"]
    inlines = [RuleInline]


@admin.register(ConfigVersion)
class ConfigVersionAdmin(ReadOnlyAdmin):
    """Read-only: a published version never changes and is never deleted (its number is never reused)."""

    list_display = ["__str__", "config", "number", "published_at", "published_by", "note"]
    list_filter = ["config__workspace"]
    search_fields = ["config__public_id", "config__name", "note"]


@admin.register(Rule)
class RuleAdmin(admin.ModelAdmin):
    list_display = ["public_id", "config", "order", "kind", "match", "point", "enabled"]
    list_filter = ["kind", "point", "enabled", "config__workspace"]
    search_fields = ["public_id", "match", "message", "config__public_id"]
    readonly_fields = ["public_id", "ask_in", "on_reject"]
