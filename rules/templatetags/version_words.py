"""A frozen version's stored values as words on its page: `mcp_server` → MCP server, 50000 → 50,000."""

from django import template

from contacts.models import Channel
from rules.models import PassInformationLevel, RuleKind, RulePoint, TokenCapMode

register = template.Library()


def _label(choices, value) -> str:
    """The choice's label, or the value itself for one a later version of the code no longer knows."""
    return choices(value).label if value in choices.values else str(value)


@register.filter
def kind_label(value: str) -> str:
    return _label(RuleKind, value)


@register.filter
def point_label(value: str) -> str:
    return _label(RulePoint, value)


@register.filter
def level_label(value: str) -> str:
    return _label(PassInformationLevel, value)


@register.filter
def cap_mode_label(value: str) -> str:
    return _label(TokenCapMode, value)


@register.filter
def channel_label(value: str) -> str:
    return _label(Channel, value)
