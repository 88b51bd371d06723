"""JSON bodies that cannot crash the server: nesting is bounded before Python's recursion limit is, and
text UTF-8 cannot carry (a lone surrogate) is refused, naming the field, before any field sees it."""

import io
import re
from typing import IO

from rest_framework import parsers
from rest_framework.exceptions import ParseError, ValidationError

# Far deeper than any real body (a gate's arguments included), far below the ~1000 frames Python allows.
MAX_DEPTH = 64


def _too_deep(value) -> bool:
    """Iterative, so a deep value cannot itself exhaust the stack."""
    stack = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        if depth > MAX_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


# JSON writes a surrogate only as an escape (UTF-8 has no bytes for one): a body without such an escape
# holds none, and only one with it is walked.
SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
SURROGATE = "must be valid Unicode text: it holds a lone surrogate (\\ud800–\\udfff); send UTF-8 text."


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _shown(key: str) -> str:
    """A key as an error may name it: what UTF-8 cannot carry escaped."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8")


def lone_surrogate_at(value) -> str | None:
    """The path (`questions.0.options.1.value`) of the first string or key holding a lone surrogate, or None.

    "" for the body itself. Python's json reads `"\\ud800"` as a str that UTF-8 cannot encode: every
    message, column and digest that meets it later would fail, so it is met here, once, for every field.
    """
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        if isinstance(node, str):
            if not _is_text(node):
                return path
        elif isinstance(node, dict):
            for key, child in node.items():
                child_path = f"{path}.{_shown(key)}" if path else _shown(key)
                if not _is_text(key):
                    return child_path
                stack.append((child, child_path))
        elif isinstance(node, list):
            stack.extend((child, f"{path}.{index}" if path else str(index)) for index, child in enumerate(node))
    return None


class JSONParser(parsers.JSONParser):
    """DRF's parser lets RecursionError (a 500) through for `[[[[…]]]]`; this answers 400 instead. A lone
    surrogate anywhere answers 400 naming its field."""

    def parse(self, stream: IO[bytes], media_type: str | None = None, parser_context: dict | None = None) -> object:
        too_deep = ParseError(f"JSON parse error - nested more than {MAX_DEPTH} levels deep; send a flatter body.")
        raw = stream.read()
        try:
            data = super().parse(io.BytesIO(raw), media_type, parser_context)
        except RecursionError:
            raise too_deep from None
        # A value nests no deeper than the brackets its body opens: most bodies cannot be too deep,
        # and counting bytes costs far less than walking what they parsed to.
        if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and _too_deep(data):
            raise too_deep
        if SURROGATE_ESCAPE.search(raw):
            path = lone_surrogate_at(data)
            if path is not None:
                field = path or "non_field_errors"
                raise ValidationError({field: f"{path or 'The body'} {SURROGATE}"})
        return data
