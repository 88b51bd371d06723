"""The one escaping every surface uses for engine text (control and bidi characters made visible), and the
formats every surface shares: durations, counts, JSON, moments."""

import json
import unicodedata
from datetime import datetime, timedelta

from django.utils import timezone

# Engine-supplied text shown to people: control and bidi characters made visible, never obeyed.
# A `\r` or an ANSI escape in a target rewrites a line of `hitl pending`; a U+202E turns
# "prod_db.\u202egnp.tmp_" into what looks like "prod_db._pmt.png". Every surface that shows engine
# text (CLI, cards, history, notifications) passes it through `visible()`, so a reviewer sees `\r`,
# `\x1b`, `\u202e` where those characters are. The stored text is untouched (the call digest is
# over the exact bytes).
#
# Cc: C0/C1 controls and DEL; Cf: format characters (bidi embeddings, overrides and isolates,
# zero-width joiners and spaces, BOM, tags); Zl/Zp: line and paragraph separators.
HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape_char(char: str) -> str:
    if char in NAMED:
        return NAMED[char]
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def visible(text: object, *, keep_newlines: bool = False) -> str:
    """`text` with every control, bidi and invisible format character written as its escape.

    keep_newlines: leave "\\n" as a line break (multi-line text in a page's <pre>); the CLI,
    whose rows are one line each, escapes it like the rest.
    """
    if text is None:
        return ""
    text = str(text)
    if text.isprintable():  # the common case (no Cc/Cf/Zl/Zp among its characters): nothing to do
        return text
    if keep_newlines and text.replace("\n", "").isprintable():
        # Multi-line text whose only controls are its line breaks (every card's pretty-printed
        # arguments): the per-character walk below was a fifth of the Approvals tab's time.
        return text
    return "".join(
        char
        if (keep_newlines and char == "\n") or unicodedata.category(char) not in HIDDEN_CATEGORIES
        else escape_char(char)
        for char in text
    )


def duration(value: timedelta | None) -> str:
    """3m 12s · 1h 02m · 2d 3h."""
    if value is None:
        return "—"
    seconds = max(0, int(value.total_seconds()))
    days, seconds = divmod(seconds, 86400)
    hours, seconds = divmod(seconds, 3600)
    minutes, seconds = divmod(seconds, 60)
    if days:
        return f"{days}d {hours}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


def thousands(value: int | None) -> str:
    """51200 → 51,200: token counts are read at a glance."""
    return f"{value:,}" if isinstance(value, int) else ""


def pretty_json(value: object) -> str:
    # JSON escapes control characters itself; bidi and zero-width ones it leaves raw.
    return visible(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False), keep_newlines=True)


def visible_lines(text: str | None) -> str:
    """Multi-line text (a summary, a rule's message): line breaks kept, every other control made visible."""
    return visible(text, keep_newlines=True)


def when(moment: datetime | None) -> str:
    if moment is None:
        return "—"
    return timezone.localtime(moment, timezone.get_fixed_timezone(0)).strftime("%Y-%m-%d %H:%M:%S UTC")
