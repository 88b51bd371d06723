from django.contrib import admin, messages

from . import services
from .models import ApiToken, Membership, Workspace


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    autocomplete_fields = ["user"]


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "plan", "created_at"]
    list_filter = ["plan"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "workspace", "role", "created_at"]
    list_filter = ["role", "workspace"]
    search_fields = ["user__email", "workspace__slug", "workspace__name"]
    autocomplete_fields = ["user", "workspace"]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created by the CLI (the raw value is shown once); staff can only revoke here."""

    list_display = ["hint", "kind", "workspace", "user", "name", "created_at", "revoked_at"]
    list_filter = ["kind", "workspace", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["hint", "name", "user__email", "workspace__slug"]
    readonly_fields = ["workspace", "kind", "user", "name", "hint", "created_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset) -> None:
        for token in queryset:
            services.token_revoke(token=token)
        self.message_user(request, f"Revoked {queryset.count()} token(s).", messages.SUCCESS)
