"""CLI: `hitl telegram set-webhook [--url URL]` registers the bot's webhook with Telegram (docs/telegram.md)."""

import argparse
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.urls import reverse

from . import telegram


def set_webhook(cmd: BaseCommand, options: dict[str, Any]) -> None:
    url = options.get("url") or ""
    if not url:
        if not settings.HITL_BASE_URL:
            raise CommandError("HITL_BASE_URL is not set: set it, or give the webhook's address with --url.")
        url = settings.HITL_BASE_URL + reverse("integrations:telegram-webhook")
    if not url.startswith("https://"):
        raise CommandError(f"Telegram sends updates to https:// addresses only, not {url!r}.")
    try:
        telegram.set_webhook(url=url)
    except telegram.TelegramError as error:
        raise CommandError(error.message) from None
    cmd.stdout.write(f"Telegram will send the bot's updates to {url}")


def register(subparsers: argparse._SubParsersAction) -> None:
    bot = subparsers.add_parser("telegram", help="the Telegram bot")
    commands = bot.add_subparsers(dest="telegram_command", required=True, metavar="set-webhook")
    hook = commands.add_parser("set-webhook", help="register the portal's webhook (and its secret) with Telegram")
    hook.add_argument(
        "--url", help="the webhook's public address (default: HITL_BASE_URL/integrations/telegram/webhook)"
    )
    hook.set_defaults(handler=set_webhook)
