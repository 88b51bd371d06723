from django import template

from passkeys.selectors import passkeys_of

register = template.Library()


@register.inclusion_tag("passkeys/_account.html", takes_context=True)
def passkeys_section(context: template.Context) -> dict:
    """The account page's Passkeys section: the person's passkeys, to name, remove and add to."""
    request = context["request"]
    return {"passkeys": list(passkeys_of(request.user)), "csrf_token": context.get("csrf_token")}
