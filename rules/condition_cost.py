"""What a condition may cost, worked out on its tree (rules/cel_syntax.py) before anything evaluates it.

The cost is counted in interpreter steps as a polynomial in n, the elements the call's arguments
may hold (a JSON text of b bytes holds at most (b + 1) / 2 values). Every node is a step; what reads
or copies a value costs its size too (comparisons, `in`, calls; a chain of `+` copies its growing
result once per operand); a comprehension costs its body once per element of its list, and the
library's `map` and `filter` copy their growing result at each element, so they cost the square of
their list. The element a comprehension binds is counted apart: over all elements their sizes add
up to the list's, so `rows.exists(r, r.table == "users")` is linear, not quadratic.

Refused when saved: a comprehension inside another's body, a cost that grows faster than n², and a
part that costs more than STEPS_INLINE whatever the call (a `map` over a 200-item literal list). At
evaluation, `Cost.inline_up_to` says how large the arguments may be for the condition to run on the
caller's own thread; above it the condition runs in an evaluator process killed at the time limit
(rules/evaluator.py).
"""

from dataclasses import dataclass

from .cel_syntax import Node

# At most this many steps are run on the caller's thread (far inside HITL_CONDITION_TIME_LIMIT_MS even
# on a loaded machine: docs/policy.md has the measurement); a condition whose fixed part is dearer is refused.
STEPS_INLINE = 10_000
INPUT = "arguments"  # the one variable whose size the caller chooses; the others are short model fields

Poly = dict[tuple[int, int], int]  # {(i, j): c} is c · n^i · e^j, e the size of a comprehension's element


class CostRefused(ValueError):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


def _const(value: int) -> Poly:
    return {(0, 0): value}


_N: Poly = {(1, 0): 1}
_E: Poly = {(0, 1): 1}


def _add(*polys: Poly) -> Poly:
    total: Poly = {}
    for poly in polys:
        for power, coefficient in poly.items():
            total[power] = total.get(power, 0) + coefficient
    return total


def _mul(a: Poly, b: Poly, node: Node) -> Poly:
    product: Poly = {}
    for (i, j), x in a.items():
        for (k, m), y in b.items():
            if i + k > 2 or j + m > 1:
                raise CostRefused(
                    f"condition's {_what(node)} at position {node.position} costs more than the square of the call's "
                    "arguments: read the list once, without building lists inside it",
                    node.position,
                )
            product[(i + k, j + m)] = product.get((i + k, j + m), 0) + x * y
    return product


def _split(poly: Poly) -> tuple[Poly, Poly]:
    """The part without e, and e's coefficient."""
    return {(i, 0): c for (i, j), c in poly.items() if j == 0}, {(i, 0): c for (i, j), c in poly.items() if j == 1}


def _what(node: Node) -> str:
    if node.kind == "comprehension":
        return f"{node.name}(…)"
    if node.kind == "op":
        return f"chain of {node.name!r}"
    return node.kind


@dataclass(frozen=True)
class Cost:
    steps: tuple[int, int, int]  # the steps' polynomial in n: constant, n, n²
    inline_up_to: int  # the largest n it is evaluated for on the caller's thread (STEPS_INLINE at most)

    def at(self, n: int) -> int:
        return _at(self.steps, n)


def _at(steps: tuple[int, int, int], n: int) -> int:
    return steps[0] + steps[1] * n + steps[2] * n * n


def _inline_up_to(steps: tuple[int, int, int]) -> int:
    low, high = 0, 1 << 20
    if _at(steps, high) <= STEPS_INLINE:
        return high
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if _at(steps, middle) <= STEPS_INLINE else (low, middle - 1)
    return low


def condition_cost(tree: Node) -> Cost:
    """The condition's cost, or CostRefused naming the position of what makes it too dear."""
    steps, _size = _walk(tree, {}, inside=None)
    if _reads_input(tree):
        steps = _add(steps, _N)  # handing the arguments to the library converts each of their values once
    fixed = steps.get((0, 0), 0)
    if fixed > STEPS_INLINE:
        raise CostRefused(
            f"condition takes about {fixed:,} steps whatever the call (at most {STEPS_INLINE:,}): make it shorter",
            tree.position,
        )
    polynomial = (fixed, steps.get((1, 0), 0), steps.get((2, 0), 0))
    return Cost(steps=polynomial, inline_up_to=_inline_up_to(polynomial))


def _reads_input(tree: Node) -> bool:
    pending = [tree]
    while pending:
        node = pending.pop()
        if node.kind == "ident" and node.name == INPUT:
            return True
        pending.extend(node.children)
    return False


def _walk(node: Node, scope: dict[str, Poly], *, inside: Node | None) -> tuple[Poly, Poly]:
    """(steps, size) of a node, each a polynomial."""
    if node.kind == "comprehension":
        return _comprehension(node, scope, inside=inside)
    if node.kind == "lit":
        return _const(1), _const(node.size)
    if node.kind == "ident":
        if node.name in scope:
            return _const(1), scope[node.name]
        return _const(1), _N if node.name == INPUT else _const(1)
    walked = [_walk(child, scope, inside=inside) for child in node.children]
    steps = _add(_const(1), *(s for s, _ in walked))
    sizes = _add(*(z for _, z in walked)) if walked else _const(1)
    if node.kind in ("select", "index"):
        return steps, walked[0][1]
    if node.kind in ("list", "map", "struct"):
        return _add(steps, _const(len(walked))), _add(sizes, _const(len(walked)))
    if node.kind == "cond":
        return steps, _add(walked[1][1], walked[2][1])
    if node.kind == "op" and node.name == "+":
        copies = _mul(_const(len(walked) - 1), sizes, node)  # each `+` of the chain copies what it has built
        total = _add(steps, copies)
        _refuse_fixed(node, total)
        return total, sizes
    if node.kind == "op" and node.name in ("==", "!=", "<", "<=", ">", ">=", "in"):
        return _add(steps, sizes), _const(1)
    if node.kind == "op":
        return steps, _const(1)
    return _add(steps, sizes), sizes  # a call reads its arguments (linear-time functions, RE2-like regexes)


def _comprehension(node: Node, scope: dict[str, Poly], *, inside: Node | None) -> tuple[Poly, Poly]:
    if inside is not None:
        raise CostRefused(
            f"condition has a comprehension inside another at position {node.position}: one level of "
            "all/exists/exists_one/map/filter at a time",
            node.position,
        )
    range_steps, range_size = _walk(node.children[0], scope, inside=inside)
    body_scope = {**scope, node.var: _E}
    body = [_walk(child, body_scope, inside=node) for child in node.children[1:]]
    body_steps = _add(_const(1), *(s for s, _ in body))
    per_element, per_size = _split(body_steps)
    # the element's own size, summed over all elements, is at most the list's size
    steps = _add(range_steps, _mul(range_size, per_element, node), _mul(per_size, range_size, node))
    size = _const(1)
    if node.name in ("map", "filter"):
        steps = _add(steps, _mul(range_size, range_size, node))  # the library copies its growing list each step
        size = range_size
        if node.name == "map":
            value_fixed, value_per_size = _split(body[-1][1])
            size = _add(_mul(range_size, value_fixed, node), _mul(value_per_size, range_size, node))
    _refuse_fixed(node, steps)
    return steps, size


def _refuse_fixed(node: Node, steps: Poly) -> None:
    fixed = steps.get((0, 0), 0)
    if fixed > STEPS_INLINE:
        raise CostRefused(
            f"condition's {_what(node)} at position {node.position} takes about {fixed:,} steps whatever the call "
            f"(at most {STEPS_INLINE:,}): use a shorter list",
            node.position,
        )
