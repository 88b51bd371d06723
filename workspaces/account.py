"""The account page: what a person sets up for themselves in the current workspace.

Each feature adds a section: a function in SECTIONS taking the request and returning its
template (`"template"`) and that template's context. The page stays ignorant of what a section
is about, so Web Push, a linked chat account or passkeys each live in their own module.
"""

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.module_loading import import_string

from .decorators import member_required

SECTIONS = [
    "passkeys.views.account_section",
    "push.views.account_section",
]


@member_required
def account(request: HttpRequest) -> HttpResponse:
    sections = [import_string(path)(request) for path in SECTIONS]
    return render(request, "workspaces/account.html", {"sections": sections})
