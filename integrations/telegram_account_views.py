"""The account page's Telegram section: make a one-time link code, unlink (integrations.telegram_accounts)."""

from django.conf import settings
from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from workspaces.account import account_page
from workspaces.decorators import member_required

from .models import TelegramAccount
from .telegram_accounts import telegram_account_unlink, telegram_link_code_create


def account_section(request: HttpRequest, code: str = "") -> dict:
    """The account page's Telegram section (templates/integrations/_telegram_account.html)."""
    linked = TelegramAccount.objects.filter(user=request.user).first()
    username = settings.HITL_TELEGRAM_BOT_USERNAME
    return {
        "template": "integrations/_telegram_account.html",
        "linked": linked,
        # No bot, no one to send a code to: the section says so rather than hand one out.
        "configured": bool(settings.HITL_TELEGRAM_BOT_TOKEN),
        "code": code,
        # Telegram's deep link: opening it and pressing Start sends the bot "/start CODE".
        "bot_link": f"https://t.me/{username}?start={code}" if username and code else "",
    }


@member_required
@require_POST
def link_code(request: HttpRequest) -> HttpResponse:
    """A new code, shown on the page this answer renders (never in a URL, never stored in clear)."""
    if not settings.HITL_TELEGRAM_BOT_TOKEN:
        messages.error(request, "Telegram is not set up on this portal: there is no bot to send a code to.")
        return redirect("account")
    code = telegram_link_code_create(user=request.user)
    response = account_page(request, given=account_section(request, code))
    response["Cache-Control"] = "no-store"
    return response


@member_required
@require_POST
def unlink(request: HttpRequest) -> HttpResponse:
    if telegram_account_unlink(user=request.user):
        messages.success(request, "Telegram unlinked: its button presses no longer decide as you.")
    return redirect("account")
