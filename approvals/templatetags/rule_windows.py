"""Rule windows on the Rules tab (templates/rules/): the page is the rules app's, the windows are grants."""

from django import template

from approvals.grants.views import WindowForm
from approvals.grants.windows import live_windows
from approvals.models import Grant

register = template.Library()


@register.simple_tag
def rule_windows(config) -> dict[str, list[Grant]]:
    """rule id → the config's live rule windows, read once for the page."""
    return live_windows(config_pk=config.pk)


@register.filter
def windows_of(windows: dict[str, list[Grant]], rule) -> list[Grant]:
    return windows.get(rule.public_id, [])


@register.simple_tag
def window_form(rules: list) -> WindowForm:
    """The form that opens a window, offering the draft's rules."""
    return WindowForm(rules=rules)
