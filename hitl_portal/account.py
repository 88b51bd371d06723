"""The account page (/account/): what belongs to the person, not to a workspace.

Each section is a partial with its own context provider (`SECTIONS`), so channels that need
something of the person (a linked Telegram account, a browser subscribed to push, a passkey) add a
section without touching the others.
"""

from importlib import import_module

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

# (template, "module.function" giving that partial's context for the request)
SECTIONS = [
    ("account/_telegram.html", "integrations.telegram_account_views.section_context"),
]


def _provider(dotted: str):
    module, name = dotted.rsplit(".", 1)
    return getattr(import_module(module), name)


def account_page(request: HttpRequest, *, given: dict[str, dict] | None = None) -> HttpResponse:
    """The page; `given`: a section's context already worked out (a POST that shows something once)."""
    given = given or {}
    sections = [
        {"template": template, **(given[template] if template in given else _provider(dotted)(request))}
        for template, dotted in SECTIONS
    ]
    return render(request, "account/account.html", {"sections": sections})


@login_required
def account(request: HttpRequest) -> HttpResponse:
    return account_page(request)
