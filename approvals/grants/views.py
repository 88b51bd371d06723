"""Rule windows on the Rules tab (API.md, "Policy"): an admin opens one for a rule, or closes it early —
the same services as the API (approvals/grants/windows.py)."""

import datetime

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.utils import timezone
from django.views.decorators.http import require_POST

from approvals.grants.services import grant_revoke
from approvals.grants.windows import rule_window_create
from approvals.models import Grant, GrantScope
from rules import selectors
from workspaces.decorators import admin_required


class WindowForm(forms.Form):
    rule_id = forms.ChoiceField(label="Rule")
    hours = forms.IntegerField(
        label="For (hours)", min_value=1, max_value=168, initial=4, help_text="At most 168 (7 days)."
    )
    reason = forms.CharField(label="Reason", max_length=2000, widget=forms.TextInput)

    def __init__(self, *args, rules: list, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["rule_id"].choices = [(rule.public_id, f"{rule.get_kind_display()} {rule.match}") for rule in rules]


@admin_required
@require_POST
def window_open(request: HttpRequest, cfg: str) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    form = WindowForm(request.POST, rules=list(config.rules.all()))
    if not form.is_valid():
        messages.error(request, " ".join(error for errors in form.errors.values() for error in errors))
        return redirect("rules:rules", config.public_id)
    expires_at = timezone.now() + datetime.timedelta(hours=form.cleaned_data["hours"])
    try:
        grant = rule_window_create(
            workspace=request.actor.workspace,
            user=request.user,
            rule_id=form.cleaned_data["rule_id"],
            expires_at=expires_at,
            reason=form.cleaned_data["reason"],
        )
    except ValidationError as refusal:
        messages.error(request, " ".join(refusal.messages))
        return redirect("rules:rules", config.public_id)
    messages.success(
        request, f"Opened {grant.public_id}: the rule's calls are approved until {expires_at:%Y-%m-%d %H:%M} UTC."
    )
    return redirect("rules:rules", config.public_id)


@admin_required
@require_POST
def window_close(request: HttpRequest, cfg: str, grt: str) -> HttpResponse:
    config = selectors.config_for(workspace=request.actor.workspace, public_id=cfg)
    grant = Grant.objects.filter(config=config, scope=GrantScope.RULE, public_id=grt).first()
    if grant is not None:
        grant_revoke(grant=grant, user=request.user)
        messages.success(request, f"Closed {grant.public_id}: the rule asks again.")
    return redirect("rules:rules", config.public_id)
