"""`python manage.py hitl <command>`: the host's CLI (docs/api.md, CLI).

Each app contributes its commands through a `register(subparsers)` function in its `cli`
module; every command is a function taking the parsed options and returning nothing. Bad
input raises CommandError, which exits 2 with a one-line message.
"""

import sys
from contextlib import nullcontext
from importlib import import_module
from typing import Any, NoReturn

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test.utils import override_settings

CLI_MODULES = [
    "workspaces.cli",
    "launch.demo",
    "approvals.cli.review",
    "approvals.cli.halts",
    "approvals.cli.receipts",
    "approvals.cli.demo_engine",
    "collaboration.cli",
    "insights.audit_cli",
    "push.cli",
    "integrations.cli",
    "contacts.cli",
    "people.cli",
]


class OneLineParser(CommandParser):
    """Bad arguments: one line on stderr and exit 2, not a page of usage."""

    def error(self, message: str) -> NoReturn:
        if not self.called_from_command_line:
            raise CommandError(message)
        sys.stderr.write(f"hitl: {message} (see `python manage.py hitl --help`)\n")
        sys.exit(2)


class Command(BaseCommand):
    help = "HITL Portal: workspaces, members, tokens, and the reviewer's queue."

    def add_arguments(self, parser: CommandParser) -> None:
        # Sub-parsers must report bad input like the command itself: exit 2, one line (Django's
        # add_subparsers gives them the parser's class, and whether it was called from the command line).
        parser.__class__ = OneLineParser
        subparsers = parser.add_subparsers(
            dest="hitl_command", required=True, metavar="command", parser_class=OneLineParser
        )
        for module in CLI_MODULES:
            import_module(module).register(subparsers)

    def handle(self, *args: Any, **options: Any) -> None:
        handler = options.get("handler")
        if handler is None:
            raise CommandError("Name a command; see `python manage.py hitl --help`.")
        handler(self, options)

    def execute(self, *args: Any, **options: Any) -> str | None:
        # A command may do without a check the others need: `receipt-key new` makes the very key whose
        # absence the receipt check reports (and tells the operator to make with it).
        silenced = options.get("silenced_checks", ())
        silencing = (
            override_settings(SILENCED_SYSTEM_CHECKS=[*settings.SILENCED_SYSTEM_CHECKS, *silenced])
            if silenced
            else nullcontext()
        )
        try:
            with silencing:
                return super().execute(*args, **options)
        except CommandError as error:
            error.returncode = 2
            raise
