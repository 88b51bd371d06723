"""Rule conditions: a CEL expression over the call a rule gates (API.md, "Policy").

Compiled when a rule is saved (a refusal names the position and the unknown name), compiled again
once per frozen version as the version is first used (kept on the cached ConfigVersion, so
rules.versions.frozen_versions stays the one cache), and evaluated at registration against
the contract's variables. The library is common-expression-language (Rust, cel-interpreter): it
compiled and evaluated a typical condition an order of magnitude faster than the pure-Python
cel-python (docs/policy.md has the measurement).

A condition's cost is bounded before it runs, on its parsed tree (rules/cel_syntax.py, then
rules/condition_cost.py): at most CONDITION_MAX characters, nesting at most MAX_DEPTH deep, no
comprehension inside another, no part dearer than STEPS_INLINE steps whatever the call, nothing
growing faster than the square of the call's arguments. Each evaluation is then bounded too: one
whose bound, for the arguments at hand, is within STEPS_INLINE runs on the caller's thread (tens of
microseconds for a typical condition); any other runs in an evaluator process killed at
HITL_CONDITION_TIME_LIMIT_MS (rules/evaluator.py). Slower than the limit counts as an error, which
fails closed.
"""

import datetime
import re
import time
from dataclasses import dataclass

import cel
from django.conf import settings

from . import evaluator
from .cel_syntax import Node, SyntaxRefused, parse
from .condition_cost import INPUT, Cost, CostRefused, condition_cost

CONDITION_MAX = 2000
# The variables a condition may read, and what each is (the rule editor's help says the same).
VARIABLES = {
    "target": "string",
    "operation": "string",
    "caller": "string",
    "requested_by": "string: the email of the person the run acts for, or empty",
    "run_id": "string",
    "arguments": "the call's arguments (JSON), null below pass information level full",
    "now": "timestamp: when the request is registered",
}
_PARSER_POSITION = re.compile(r"<input>:(\d+):(\d+):\s*(.*)")
_NEVER_CAUGHT = (KeyboardInterrupt, SystemExit, GeneratorExit)

# The worked examples the rule editor shows (docs/policy.md has them too).
EXAMPLES = [
    ('arguments.amount_cents > 10000 && !caller.startsWith("svc-")', "refunds over 100 USD, not by a service"),
    ('target in ["prod-db", "billing"]', "only these targets"),
    ('requested_by == "" || !requested_by.endsWith("@example.com")', "nobody of ours is behind the run"),
    ("now.getHours() < 7 || now.getHours() >= 19", "outside 07:00–19:00 UTC"),
    ("has(arguments.force) && arguments.force == true", "only forced calls"),
    ('arguments.rows.exists(r, r.table == "users")', "any row of the users table"),
]


class ConditionInvalid(ValueError):
    """A condition that does not compile, or names what it may not read; the message says where."""

    def __init__(self, message: str, *, position: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


class ConditionFailed(Exception):
    """Evaluating a condition went wrong: the request fails closed and its card says why."""


@dataclass(frozen=True)
class Condition:
    """A compiled condition, and the variables it reads (only those are handed to CEL)."""

    source: str
    program: cel.Program
    reads: tuple[str, ...]
    cost: Cost


def _parse_error(source: str, error: Exception) -> ConditionInvalid:
    text = str(error)
    found = _PARSER_POSITION.search(text)
    if not found:
        return ConditionInvalid(f"condition does not compile: {text.splitlines()[0][:300]}")
    line, column, why = int(found[1]), int(found[2]), found[3].strip()
    position = sum(len(row) + 1 for row in source.split("\n")[: line - 1]) + column
    return ConditionInvalid(f"condition does not compile at position {position}: {why[:300]}", position=position)


def condition_compile(source: str) -> Condition:
    """Compile a condition, or raise ConditionInvalid naming the position (and the name it does not know)."""
    if len(source) > CONDITION_MAX:
        raise ConditionInvalid(f"condition is at most {CONDITION_MAX:,} characters; it has {len(source):,}")
    if "\x00" in source:
        raise ConditionInvalid("condition may not contain a NUL character", position=source.index("\x00") + 1)
    try:
        tree = parse(source)
        cost = condition_cost(tree)
    except (SyntaxRefused, CostRefused) as refusal:
        raise ConditionInvalid(refusal.message, position=refusal.position) from None
    try:
        program = cel.compile(source)
    except _NEVER_CAUGHT:
        raise
    except BaseException as error:  # the binding raises ValueError; a Rust panic, pyo3's PanicException
        raise _parse_error(source, error) from None
    names = _names(tree)
    for name in program.variables():
        if name in VARIABLES or name in names["bound"]:
            continue
        position = names["read"].get(name)
        where = f" at position {position}" if position else ""
        raise ConditionInvalid(
            f"condition names {name}{where}, which it cannot read: use {', '.join(VARIABLES)}",
            position=position,
        )
    reads = tuple(name for name in program.variables() if name in VARIABLES)
    return Condition(source=source, program=program, reads=reads, cost=cost)


def _names(tree: Node) -> dict:
    """The names a comprehension binds, and where each other name is first read."""
    bound, read, pending = set(), {}, [tree]
    while pending:
        node = pending.pop()
        if node.kind == "comprehension":
            bound.add(node.var)
        elif node.kind == "ident":
            read[node.name] = min(read.get(node.name, node.position), node.position)
        pending.extend(node.children)
    return {"bound": bound, "read": read}


def condition_error(source: str) -> str | None:
    """Why a condition would be refused, or None (blank is no condition: the rule asks about every call)."""
    if not source.strip():
        return None
    try:
        condition_compile(source)
    except ConditionInvalid as refusal:
        return refusal.message
    return None


def variables_of(
    *,
    target: str,
    operation: str,
    caller: str,
    requested_by: str,
    run_id: str,
    arguments,
    now: datetime.datetime,
) -> dict:
    return {
        "target": target,
        "operation": operation,
        "caller": caller,
        "requested_by": requested_by,
        "run_id": run_id,
        "arguments": arguments,
        "now": now,
    }


def condition_holds(condition: Condition, variables: dict) -> bool:
    """Whether the rule asks about this call; ConditionFailed (fail closed) when it cannot tell."""
    # Only what the condition reads is converted to CEL values: the conversion is most of the cost.
    context = {name: variables[name] for name in condition.reads}
    limit_ms = settings.HITL_CONDITION_TIME_LIMIT_MS
    if _inline(condition, context):
        started = time.perf_counter()
        try:
            result = condition.program.execute(context)
        except _NEVER_CAUGHT:
            raise
        except BaseException as error:  # a Rust panic arrives as pyo3's PanicException, a BaseException
            raise ConditionFailed(_evaluation_message(type(error).__name__, str(error))) from None
        if (time.perf_counter() - started) * 1000 > limit_ms:
            raise ConditionFailed(_over_limit(limit_ms))
    else:
        result = _in_evaluator(condition, context, limit_ms)
    if not isinstance(result, bool):
        raise ConditionFailed(f"the condition gave {type(result).__name__} {str(result)[:80]!r}, not true or false")
    return result


def _inline(condition: Condition, context: dict) -> bool:
    """Whether the condition's bound, for these arguments, lets it run on the caller's thread."""
    if INPUT not in context:
        return True
    return _size_within(context[INPUT], condition.cost.inline_up_to)


def _size_within(value, limit: int) -> bool:
    """Whether the arguments hold at most `limit` units of size (a value, or two characters of a string).

    What their JSON text's length halved would say, counted without writing it, and given up early.
    """
    size, pending = 0, [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            size += len(item) // 2 + 1
        elif isinstance(item, dict):
            size += 1
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            size += 1
            pending.extend(item)
        else:
            size += 1
        if size > limit:
            return False
    return True


def _in_evaluator(condition: Condition, context: dict, limit_ms: int):
    try:
        answer = evaluator.evaluate(condition.source, context, seconds=limit_ms / 1000)
    except evaluator.EvaluatorOverrun:
        raise ConditionFailed(_over_limit(limit_ms)) from None
    except evaluator.EvaluatorGone:
        raise ConditionFailed("the condition could not be evaluated: its evaluator stopped (out of memory)") from None
    if "error" in answer:
        raise ConditionFailed(_evaluation_message(answer["error"], answer["text"]))
    if "value" in answer:
        return answer["value"]
    raise ConditionFailed(f"the condition gave {answer['type']} {answer['text']!r}, not true or false")


def _over_limit(limit_ms: int) -> str:
    return f"the condition took longer than its limit of {limit_ms} ms to evaluate"


def _evaluation_message(kind: str, text: str) -> str:
    text = text.split(". ")[0][:300]
    if kind == "KeyError":
        return f"the condition read {text}, which this call does not have (guard it with has(…))"
    return f"the condition could not be evaluated: {text}"


def condition_of(version, rule: dict) -> Condition | None:
    """A frozen rule's compiled condition, compiled once per version object (versions.frozen_versions keeps them).

    A frozen condition compiled when its draft was saved; should it fail now (a library change),
    ConditionFailed makes its requests fail closed.
    """
    source = rule.get("condition") or ""
    if not source.strip():
        return None
    kept = version.__dict__.setdefault("_conditions", {})
    if source not in kept:
        try:
            kept[source] = condition_compile(source)
        except ConditionInvalid as refusal:
            kept[source] = refusal
    compiled = kept[source]
    if isinstance(compiled, ConditionInvalid):
        raise ConditionFailed(compiled.message)
    return compiled
