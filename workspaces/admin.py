from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.db import transaction
from django.db.models import QuerySet
from django.forms import BaseInlineFormSet, ModelForm
from django.http import HttpRequest

from audit.services import actor_of, audit_append

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

    def save_model(self, request: HttpRequest, obj: Workspace, form: ModelForm, change: bool) -> None:
        # A plan change goes through the service, so the audit log records who made it.
        if change and "plan" in form.changed_data:
            plan = obj.plan
            obj.plan = form.initial["plan"]
            super().save_model(request, obj, form, change)
            services.workspace_set_plan(workspace=obj, plan=plan, actor=actor_of(user=request.user))
            return
        super().save_model(request, obj, form, change)

    def save_formset(self, request: HttpRequest, form: ModelForm, formset: BaseInlineFormSet, change: bool) -> None:
        with transaction.atomic():
            super().save_formset(request, form, formset, change)
            for membership in formset.new_objects:
                _member_changed(request, membership, "added")
            for membership, _ in formset.changed_objects:
                _member_changed(request, membership, "role_set")
            for membership in formset.deleted_objects:
                _member_changed(request, membership, "removed")


def _member_changed(request, membership: Membership, change: str) -> None:
    audit_append(
        workspace_id=membership.workspace_id,
        actor=actor_of(user=request.user),
        action="member.changed",
        object=membership.user.email,
        data={"change": change, "role": membership.role},
    )


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "workspace", "role", "created_at"]
    list_filter = ["role", "workspace"]
    search_fields = ["user__email", "workspace__slug", "workspace__name"]
    autocomplete_fields = ["user", "workspace"]

    @transaction.atomic
    def save_model(self, request: HttpRequest, obj: Membership, form: ModelForm, change: bool) -> None:
        super().save_model(request, obj, form, change)
        _member_changed(request, obj, "role_set" if change else "added")

    @transaction.atomic
    def delete_model(self, request: HttpRequest, obj: Membership) -> None:
        _member_changed(request, obj, "removed")
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Membership]) -> None:
        with transaction.atomic():
            for membership in queryset:
                _member_changed(request, membership, "removed")
            super().delete_queryset(request, queryset)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created by the CLI (the raw value is shown once); staff can only revoke here."""

    list_display = ["hint", "kind", "workspace", "user", "name", "created_at", "revoked_at"]
    list_filter = ["kind", "workspace", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["hint", "name", "user__email", "workspace__slug"]
    readonly_fields = ["workspace", "kind", "user", "name", "hint", "created_at", "revoked_at"]
    actions = ["revoke"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset:
            services.token_revoke(token=token, actor=actor_of(user=request.user))
        self.message_user(request, f"Revoked {queryset.count()} token(s).", messages.SUCCESS)


User = get_user_model()
admin.site.unregister(User)


@admin.register(User)
class PortalUserAdmin(UserAdmin):
    """A person who published a version or decided a request is history: deactivate them, never delete."""

    def get_deleted_objects(self, objs: QuerySet, request: HttpRequest) -> tuple[list, dict, set, list]:
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if protected:
            # Django lists the protected rows; say what to do instead, in words.
            messages.error(
                request,
                "People who published a config version or decided a request cannot be deleted: their "
                "names stay in the history. Deactivate them instead (untick “Active” and save).",
            )
        return deleted, counts, perms_needed, protected
