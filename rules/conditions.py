"""Rule conditions: a CEL expression over the call a rule gates (API.md, "Policy").

Compiled when a rule is saved (a refusal names the position and the unknown name), compiled again
once per frozen version as the version is first used (kept on the cached ConfigVersion, so
approvals.versions.frozen_versions stays the one cache), and evaluated at registration against
the contract's variables. The library is common-expression-language (Rust, cel-interpreter): it
compiled and evaluated a typical condition an order of magnitude faster than the pure-Python
cel-python (docs/policy.md has the measurement).

A condition's cost is bounded before it runs: at most CONDITION_MAX characters, nesting at most
MAX_DEPTH deep (the parser refuses deeper itself), no comprehension inside another (CEL has no
loops but its macros, each bounded by its list, so one level is linear in the arguments' 64 KiB)
and no string repetition exists in CEL. What is left is timed: an evaluation slower than
HITL_CONDITION_TIME_LIMIT_MS counts as an error, which fails closed.
"""

import datetime
import re
import time
from dataclasses import dataclass

import cel
from django.conf import settings

CONDITION_MAX = 2000
MAX_DEPTH = 24
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
# The macros that bind a name of their own: `list.all(x, …)` may read `x`.
_MACROS = ("all", "exists", "exists_one", "map", "filter")
_BINDING = re.compile(r"\.\s*(?:" + "|".join(_MACROS) + r")\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,")
_MACRO_CALL = re.compile(r"\.\s*(?:" + "|".join(_MACROS) + r")\s*\(")
_STRING = re.compile(r"""(?s)[rR]?(\"\"\".*?\"\"\"|'''.*?'''|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')""")
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


def _blank_strings(source: str) -> str:
    """The source with each string literal's inside blanked, so names and brackets in strings are not seen."""
    return _STRING.sub(lambda m: m.group(0)[0] + " " * (len(m.group(0)) - 2) + m.group(0)[-1], source)


def _depth_error(code: str) -> ConditionInvalid | None:
    depth = 0
    for index, char in enumerate(code):
        if char in "([{":
            depth += 1
            if depth > MAX_DEPTH:
                return ConditionInvalid(
                    f"condition nests deeper than {MAX_DEPTH} brackets at position {index + 1}: write it flatter",
                    position=index + 1,
                )
        elif char in ")]}":
            depth -= 1
    return None


def _nested_macro_error(code: str) -> ConditionInvalid | None:
    """A comprehension inside another multiplies their lists' lengths: refused, so every condition stays linear."""
    calls = list(_MACRO_CALL.finditer(code))
    for first in calls:
        depth, index = 1, first.end()
        while index < len(code) and depth:
            depth += {"(": 1, ")": -1}.get(code[index], 0)
            index += 1
        inner = next((call for call in calls if first.end() <= call.start() < index), None)
        if inner is not None:
            return ConditionInvalid(
                f"condition has a comprehension inside another at position {inner.start() + 2}: one level of "
                "all/exists/exists_one/map/filter at a time",
                position=inner.start() + 2,
            )
    return None


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
    code = _blank_strings(source)
    refusal = _depth_error(code) or _nested_macro_error(code)
    if refusal:
        raise refusal
    try:
        program = cel.compile(source)
    except _NEVER_CAUGHT:
        raise
    except BaseException as error:  # the binding raises ValueError; a Rust panic, pyo3's PanicException
        raise _parse_error(source, error) from None
    bound = set(_BINDING.findall(code))
    for name in program.variables():
        if name in VARIABLES or name in bound:
            continue
        found = re.search(rf"(?<![.\w]){re.escape(name)}\b", code)
        position = found.start() + 1 if found else None
        where = f" at position {position}" if position else ""
        raise ConditionInvalid(
            f"condition names {name}{where}, which it cannot read: use {', '.join(VARIABLES)}",
            position=position,
        )
    reads = tuple(name for name in program.variables() if name in VARIABLES)
    return Condition(source=source, program=program, reads=reads)


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
    started = time.perf_counter()
    try:
        result = condition.program.execute(context)
    except _NEVER_CAUGHT:
        raise
    except BaseException as error:  # a Rust panic arrives as pyo3's PanicException, a BaseException
        raise ConditionFailed(_evaluation_message(error)) from None
    limit_ms = settings.HITL_CONDITION_TIME_LIMIT_MS
    spent_ms = (time.perf_counter() - started) * 1000
    if spent_ms > limit_ms:
        raise ConditionFailed(f"the condition took longer than its limit of {limit_ms} ms to evaluate")
    if not isinstance(result, bool):
        raise ConditionFailed(f"the condition gave {type(result).__name__} {str(result)[:80]!r}, not true or false")
    return result


def _evaluation_message(error: Exception) -> str:
    kind = type(error).__name__
    text = str(error).split(". ")[0][:300]
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
