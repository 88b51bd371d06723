from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

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


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class PortalUserAdmin(UserAdmin):
    """A person who published a version or decided a request is history: deactivate them, never delete."""

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if protected:
            # Django lists the protected rows; say what to do instead, in words.
            messages.error(
                request,
                "People who published a config version or decided a request cannot be deleted: their "
                "names stay in the history. Deactivate them instead (untick “Active” and save).",
            )
        return deleted, counts, perms_needed, protected
