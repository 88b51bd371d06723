"""The Rules tab's policy pieces (API.md, "Policy"): the condition's live check, the dry run and "approve
always" proposals — the same services as the API. Rule windows are approvals' (approvals/grants/views.py)."""

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from common.exceptions import DomainError
from workspaces.decorators import admin_required

from . import selectors
from .conditions import EXAMPLES, ConditionInvalid, condition_compile
from .counts import rule_counts
from .models import Config, ProposalStatus, RuleCount
from .proposals import proposal_for, proposal_resolve
from .simulate import config_simulate

WEEK = 7
CHART_WIDTH = 320  # the dry run's bars, in the SVG's own units (no inline styles: CSP)


def condition_check_of(source: str) -> dict:
    """What the editor says under the condition box as it is typed."""
    if not (source or "").strip():
        return {}
    try:
        compiled = condition_compile(source)
    except ConditionInvalid as refusal:
        return {"error": refusal.message}
    return {"compiled": True, "reads": list(compiled.reads)}


def editor_context(condition: str) -> dict:
    return {"condition_check": condition_check_of(condition), "condition_examples": EXAMPLES}


def policy_context(config: Config, rules: list) -> dict:
    """The Rules tab's policy rows: this week's shadow and condition counts, open proposals (its live rule
    windows and their form are approvals', through the rule_windows template tags)."""
    shadow = rule_counts(config_pk=config.pk, kind=RuleCount.SHADOW, days=WEEK)
    allowed = rule_counts(config_pk=config.pk, kind=RuleCount.ALLOWED, days=WEEK)
    for rule in rules:
        rule.shadow_week = shadow.get(rule.public_id, 0)
        rule.allowed_week = allowed.get(rule.public_id, 0)
    proposals = list(config.proposals.filter(status=ProposalStatus.OPEN).select_related("rule")[:50])
    return {"proposals": proposals, "dry_run_days": WEEK}


@admin_required
@require_POST
def condition_check(request: HttpRequest, cfg: str) -> HttpResponse:
    """htmx: the condition as typed, compiled as saving will compile it."""
    selectors.config_for(workspace=request.actor.workspace, public_id=cfg)  # 404 for another workspace's
    check = condition_check_of(request.POST.get("condition", ""))
    return render(request, "rules/_condition_check.html", {"check": check})


@admin_required
@require_POST
def dry_run(request: HttpRequest, cfg: str) -> HttpResponse:
    """The Dry run button: the draft against the last N days, as a table and bars (a partial under htmx)."""
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    try:
        days = int(request.POST.get("days", WEEK))
        result = config_simulate(config=config, days=days)
    except (ValueError, DomainError) as refusal:
        context = {"config": config, "error": getattr(refusal, "message", "days is from 1 to 30.")}
        return render(request, "rules/_dry_run.html", context, status=200 if request.htmx else 400)
    names = {rule.public_id: f"{rule.get_kind_display()} {rule.match}" for rule in config.rules.all()}
    change = result["total"]["newly_asked"] - result["total"]["no_longer_asked"]
    bars = _bars(result, names)
    context = {
        "config": config,
        "result": result,
        "bars": bars,
        "chart_height": max(40, len(bars) * 40),
        "change": f"{change:+d}",
        "change_abs": abs(change),
    }
    return render(request, "rules/_dry_run.html" if request.htmx else "rules/dry_run.html", context)


def _bars(result: dict, names: dict[str, str]) -> list[dict]:
    """Each rule's three figures as bar lengths on one scale, with their rows' y positions."""
    largest = max(
        [1] + [rule[key] for rule in result["rules"] for key in ("would_ask", "no_longer_asked", "newly_asked")]
    )
    bars = []
    for index, rule in enumerate(result["rules"]):
        scaled = {
            key: round(rule[key] * CHART_WIDTH / largest) for key in ("would_ask", "no_longer_asked", "newly_asked")
        }
        bars.append(
            {
                **rule,
                **{f"{key}_w": value for key, value in scaled.items()},
                "name": names.get(rule["rule_id"], "removed from the draft"),
                "y": index * 40,
            }
        )
    return bars


@admin_required
@require_POST
def proposal_decide(request: HttpRequest, cfg: str, prp: str) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    proposal = proposal_for(config=config, public_id=prp)
    accept = request.POST.get("action") == "accept"
    proposal_resolve(proposal=proposal, user=request.user, accept=accept)
    if accept:
        messages.success(request, "Put the proposed condition in the draft. Publish to serve it.")
    else:
        messages.success(request, "Dismissed the proposal.")
    return redirect("rules:rules", config.public_id)
