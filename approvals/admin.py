from django.contrib import admin

from approvals.models import ApprovalRequest
from common.admin_readonly import ReadOnlyAdmin


@admin.register(ApprovalRequest)
class ApprovalRequestAdmin(ReadOnlyAdmin):
    """For looking, not deciding or deleting: decisions go through the queue, and history stays."""

    ordering = ["-created_at", "-id"]  # the model has no default ordering (a million rows)

    list_display = [
        "public_id",
        "kind",
        "status",
        "workspace",
        "config",
        "config_version",
        "target",
        "created_at",
        "decided_by_email",
    ]
    list_filter = ["status", "kind", "workspace"]
    search_fields = ["public_id", "run_id", "thread_id", "caller", "target", "operation"]
    date_hierarchy = "created_at"
    list_select_related = ["workspace", "config"]
    show_full_result_count = False  # no COUNT(*) over a large table
