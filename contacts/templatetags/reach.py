from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

from contacts.reach import unreachable_warning

register = template.Library()


@register.simple_tag
def unreachable(rule, contacts) -> dict | None:
    """The Rules tab's flag for a rule whose contacts cannot be reached (contacts.reach)."""
    return unreachable_warning(rule, contacts)


@register.filter
def ref(name: str) -> str:
    """A ${HITL_…} reference or variable name, whole, with a line break allowed after each underscore:
    shown in full where there is room, it wraps at a word's seam, never widening its column or cut."""
    return mark_safe(conditional_escape(name).replace("_", "_<wbr>"))
