"""JSON bodies that cannot crash the server: nesting is bounded before Python's recursion limit is."""

import io
from typing import IO

from rest_framework import parsers
from rest_framework.exceptions import ParseError

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


class JSONParser(parsers.JSONParser):
    """DRF's parser lets RecursionError (a 500) through for `[[[[…]]]]`; this answers 400 instead."""

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
        return data
