"""Engine-supplied text shown to people: control and bidi characters made visible, never obeyed.

A `\\r` or an ANSI escape in a target rewrites a line of `hitl pending`; a U+202E turns
"prod_db.\\u202egnp.tmp_" into what looks like "prod_db._pmt.png". Every surface that shows
engine text (CLI, cards, history, notifications) passes it through `visible()` first, so a
reviewer sees `\\r`, `\\x1b`, `\\u202e` where those characters are. The stored text is untouched
(the call digest is over the exact bytes).
"""

import unicodedata

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
    return "".join(
        char
        if (keep_newlines and char == "\n") or unicodedata.category(char) not in HIDDEN_CATEGORIES
        else escape_char(char)
        for char in text
    )
