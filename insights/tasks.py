"""django-q2 tasks: the schedule that rolls up closed hours (migration 0003 creates it)."""

from django.utils import timezone

from workspaces.models import Plan, Workspace

from .rollup import forget_before, roll_up, window_start


def roll_up_all() -> int:
    """Roll up every Pro and Enterprise workspace's closed hours; returns how many workspaces were looked at.

    A page view rolls up its own workspace if this has not run yet, so a stopped cluster makes the
    page slower once an hour, never wrong.
    """
    now = timezone.now()
    count = 0
    for workspace_id in Workspace.objects.filter(plan__in=(Plan.PRO, Plan.ENTERPRISE)).values_list("pk", flat=True):
        roll_up(workspace_id=workspace_id, now=now)
        forget_before(workspace_id=workspace_id, before=window_start(now))
        count += 1
    return count
