"""The Insights page (/hitl/insights/): admins see the workspace, reviewers their own decisions."""

from django.core.cache import cache
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from rules.counts import workspace_rule_counts
from workspaces.decorators import member_required

from . import charts
from .delivery_health import delivery_health
from .selectors import RUBBER_STAMP_SECONDS, insights_for, questions_for


@require_GET
@member_required
def insights(request: HttpRequest) -> HttpResponse:
    workspace = request.actor.workspace
    ctx = {"tab": "insights", "config": None, "own": not request.actor.is_admin}
    if workspace.hitl_available:
        now = timezone.now()
        reviewer = None if request.actor.is_admin else request.user.email
        # Cached for the minute: a page computed afresh reads the closed hours' rollups and the
        # current hour live (selectors.py) — cheap, but a minute old is fresh enough for a dashboard.
        key = f"insights:{workspace.pk}:{reviewer or '*'}:{int(now.timestamp()) // 60}"
        cached = cache.get(key)
        if cached is None:
            # Delivery health is for admins: it names contacts and their errors.
            cached = (
                insights_for(workspace=workspace, reviewer=reviewer, now=now),
                delivery_health(workspace=workspace, now=now) if reviewer is None else None,
                questions_for(workspace=workspace, reviewer=reviewer, now=now),
            )
            cache.set(key, cached, timeout=90)
        data, health, questions = cached
        totals = data.totals
        ctx.update(
            data=data,
            health=health,
            oldest_wait=charts.duration((now - data.oldest_pending_at).total_seconds())
            if data.oldest_pending_at
            else None,
            recent_p50=charts.about(data.recent_approximate) + charts.duration(data.recent_p50),
            recent_p90=charts.about(data.recent_approximate) + charts.duration(data.recent_p90),
            rubber_stamp_seconds=RUBBER_STAMP_SECONDS,
            rubber_stamp_share=f"{totals.fast / totals.decided_by_people:.0%}" if totals.decided_by_people else "—",
            outcomes_chart=charts.outcomes_per_day(data.days, data.per_day),
            times_chart=charts.decision_times(data.days, data.p50_per_day, data.p90_per_day, data.approximate_days),
            config_chart=charts.breakdown_bars(data.by_config),
            rule_chart=charts.breakdown_bars(data.by_rule),
            reviewer_chart=charts.breakdown_bars(data.by_reviewer),
            delivery_chart=charts.delivery_bars(health.channels) if health else None,
            colours=charts.COLOURS,
            questions=questions,
            questions_p50=charts.duration(questions.p50),
            questions_p90=charts.duration(questions.p90),
            questions_days=[(day, count) for day, count in questions.answered_per_day.items() if count][::-1],
        )
        if reviewer is None:  # admins: what shadow rules would have asked and conditions let through
            ctx["policy_counts"] = workspace_rule_counts(workspace_id=workspace.pk, days=7)
    return render(request, "insights/insights.html", ctx)
