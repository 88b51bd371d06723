from django import template

from contacts.reach import unreachable_warning

register = template.Library()


@register.simple_tag
def unreachable(rule, contacts) -> dict | None:
    """The Rules tab's flag for a rule whose contacts cannot be reached (contacts.reach)."""
    return unreachable_warning(rule, contacts)
