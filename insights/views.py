"""The Insights page (/hitl/insights/): admins see the workspace, reviewers their own decisions."""

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from workspaces.decorators import member_required

from . import charts
from .selectors import RUBBER_STAMP_SECONDS, insights_for


@require_GET
@member_required
def insights(request: HttpRequest) -> HttpResponse:
    workspace = request.actor.workspace
    ctx = {"tab": "insights", "config": None, "own": not request.actor.is_admin}
    if workspace.hitl_available:
        now = timezone.now()
        reviewer = None if request.actor.is_admin else request.user.email
        # Cached for the minute: the two open days are aggregated live, and at a busy workspace's
        # volume that is most of the page's time (bench/audit.py); a minute old is fresh enough.
        key = f"insights:{workspace.pk}:{reviewer or '*'}:{int(now.timestamp()) // 60}"
        data = cache.get(key)
        if data is None:
            data = insights_for(workspace=workspace, reviewer=reviewer, now=now)
            cache.set(key, data, timeout=90)
        totals = data.totals
        ctx.update(
            data=data,
            oldest_wait=charts.duration((now - data.oldest_pending_at).total_seconds())
            if data.oldest_pending_at
            else None,
            recent_p50=charts.duration(data.recent_p50),
            recent_p90=charts.duration(data.recent_p90),
            rubber_stamp_seconds=RUBBER_STAMP_SECONDS,
            rubber_stamp_share=f"{totals.fast / totals.decided_by_people:.0%}" if totals.decided_by_people else "—",
            outcomes_chart=charts.outcomes_per_day(data.days, data.per_day),
            times_chart=charts.decision_times(data.days, data.p50_per_day, data.p90_per_day),
            config_chart=charts.breakdown_bars(data.by_config),
            rule_chart=charts.breakdown_bars(data.by_rule),
            reviewer_chart=charts.breakdown_bars(data.by_reviewer),
            colours=charts.COLOURS,
        )
    return render(request, "insights/insights.html", ctx)
