"""The account page (/hitl/account/): what a person sets up for themselves.

Each feature adds a section: a function in SECTIONS taking the request and returning its
template (`"template"`) and that template's context. The page stays ignorant of what a section
is about, so passkeys, Web Push and a linked Telegram account each live in their own module.
"""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.module_loading import import_string

from .decorators import member_required

SECTIONS = [
    "passkeys.views.account_section",
    "push.views.account_section",
    "people.views.account_section",
    "integrations.telegram_account_views.account_section",
]


def account_page(request: HttpRequest, *, given: dict | None = None) -> HttpResponse:
    """The page; `given`: one section already worked out, by its template (a POST that shows something once)."""
    sections = []
    for path in SECTIONS:
        section = import_string(path)(request)
        if given and given["template"] == section["template"]:
            section = given
        sections.append(section)
    return render(request, "workspaces/account.html", {"sections": sections})


@member_required
def account(request: HttpRequest) -> HttpResponse:
    return account_page(request)
