"""A frozen version's stored values as words on its page: `mcp_server` → MCP server, 50000 → 50,000."""

from django import template
from django.db.models import TextChoices

from rules.vocabulary import Channel, PassInformationLevel, RuleKind, RulePoint, TokenCapMode

register = template.Library()

# `{{ rule.kind|label:"kind" }}`: which choices a stored value is one of.
CHOICES: dict[str, type[TextChoices]] = {
    "kind": RuleKind,
    "point": RulePoint,
    "level": PassInformationLevel,
    "cap_mode": TokenCapMode,
    "channel": Channel,
}


@register.filter
def label(value: str, choices: str) -> str:
    """The choice's label, or the value itself for one a later version of the code no longer knows."""
    known = CHOICES[choices]
    return known(value).label if value in known.values else str(value)
