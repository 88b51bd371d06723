"""Hostile rule conditions, generated (issue 40, item 1): each is refused when compiled or evaluated within its
limit, never holding the process that evaluates it — whatever the text and the engine's arguments."""

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rules import evaluator
from rules.conditions import ConditionFailed, ConditionInvalid, condition_compile, condition_holds

# What an engine may send at most (64 KiB of arguments), shaped to make comprehensions and `+` dear.
ARGUMENTS = {"rows": list(range(6000)), "s": "a" * 30_000, "m": {str(n): n for n in range(500)}}
VARIABLES = {
    "target": "t",
    "operation": "o",
    "caller": "c",
    "requested_by": "",
    "run_id": "r",
    "arguments": ARGUMENTS,
    "now": None,
}
MACROS = ("all", "exists", "exists_one", "map", "filter")
# What keeps each macro going to the end of its list: `all` and `filter` while true, `exists` while false.
KEEP_GOING = {"all": "({}) || true", "filter": "({}) || true", "exists": "({}) && false", "exists_one": "({}) && false"}
ENGINE_LISTS = ["arguments.rows", "arguments.rows.map(w, w)", "arguments.rows.filter(w, w >= 0)"]
RANGES = st.sampled_from(ENGINE_LISTS) | st.integers(1, 300).map(lambda size: "[" + ",".join(["1"] * size) + "]")


@st.composite
def comprehensions(draw) -> str:
    """Comprehensions 1–4 deep, each running to the end of its list, over the engine's rows or literal lists."""
    body = "x0 >= 0"
    for level in range(draw(st.integers(1, 4))):
        macro = draw(st.sampled_from(MACROS))
        kept = KEEP_GOING.get(macro, "{}").format(body)
        body = f"{draw(RANGES)}.{macro}(x{level}, {kept})"
        if macro in ("map", "filter"):
            body = f"size({body}) >= 0"
    return body


@st.composite
def concatenations(draw) -> str:
    """`+` chains of the engine's string or list: each copies what it has built."""
    operand = draw(st.sampled_from(["arguments.s", "arguments.rows", "[arguments.rows]", "arguments.m.x"]))
    return f"size({' + '.join([operand] * draw(st.integers(2, 60)))}) > 0"


@st.composite
def hostile(draw) -> str:
    code = draw(comprehensions() | concatenations() | st.integers(20, 60).map(lambda n: "(" * n + "true" + ")" * n))
    if draw(st.booleans()):  # behind a raw string the old guard read as an escaped quote
        code = f'size(r"\\") > 0 && {code} && "" == ""'
    return code[:2000]


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(source=hostile())
def test_a_hostile_condition_is_refused_or_evaluated_within_its_limit(source):
    evaluator.evaluate("true", {}, seconds=60)  # an evaluator already started: Python's start is not timed
    started, cpu_started = time.monotonic(), time.thread_time()
    try:
        condition = condition_compile(source)
        outcome = condition_holds(condition, VARIABLES)
    except (ConditionInvalid, ConditionFailed) as refusal:
        outcome = refusal
    took, cpu = time.monotonic() - started, time.thread_time() - cpu_started
    assert isinstance(outcome, (bool, ConditionInvalid, ConditionFailed))
    # The CPU this thread spent is how long it could have held the GIL (the library holds it throughout):
    # compiling and any inline evaluation, never a runaway one, which runs in an evaluator process.
    assert cpu < 0.3, f"{source!r} held this process for {cpu:.2f} s of CPU ({outcome!r})"
    # The limit is 50 ms; what is above it is the machine's load and handing the arguments to the evaluator.
    assert took < 3.0, f"{source!r} took {took:.2f} s ({outcome!r})"
