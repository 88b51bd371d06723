"""JSON bodies that cannot crash the server: nesting is bounded before Python's recursion limit is."""

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
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise too_deep from None
        if _too_deep(data):
            raise too_deep
        return data
