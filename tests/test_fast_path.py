"""The registration fast path accepts only what the serializers accept, and returns exactly their data.

The serializers stay the source of the rules and the error messages; these tests hold the fast path
to them over generated bodies, so a rule added to a serializer and missed by the fast path fails here.
"""

import threading
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from approvals.api_engine import REGISTRATION_FAST_PATHS, REGISTRATION_SERIALIZERS
from hitl_portal.fast_path import SerializerFastPath

GATE = {
    "kind": "gate",
    "config_id": "cfg_abc",
    "config_version": 3,
    "rule_id": "rul_abc",
    "run_id": "run_1",
    "thread_id": "",
    "caller": "support-agent",
    "target": "crm/customers/42",
    "operation": "delete_record",
    "summary": "Delete customer 42",
    "arguments": {"id": 42, "cascade": False, "note": "çà ✓"},
    "ttl_seconds": 600,
}
TOKEN_CAP = {
    "kind": "token_cap",
    "config_id": "cfg_abc",
    "config_version": 1,
    "run_id": "run_1",
    "thread_id": "thr_1",
    "caller": "support-agent",
    "scope": "turn",
    "tokens_used": 12_000,
    "token_cap": 10_000,
}


def serializer_says(body: dict) -> dict | None:
    serializer = REGISTRATION_SERIALIZERS[body["kind"]](data=body)
    return dict(serializer.validated_data) if serializer.is_valid() else None


@pytest.mark.parametrize("body", [GATE, TOKEN_CAP], ids=["gate", "token_cap"])
def test_a_plainly_valid_body_takes_the_fast_path_with_the_serializers_data(body):
    fast = REGISTRATION_FAST_PATHS[body["kind"]].validated(body)
    assert fast is not None, "the fast path must accept an ordinary valid body, or it is never taken"
    assert fast == serializer_says(body)


@pytest.mark.parametrize(
    "change",
    [
        {"config_version": "3"},  # a string where an integer goes
        {"config_version": True},
        {"config_version": 0},
        {"run_id": 42},
        {"run_id": ""},
        {"run_id": None},
        {"target": "x" * 501},
        {"target": "a\x00b"},
        {"target": "lone \ud800 surrogate"},
        {"summary": "s" * 2001},
        {"arguments": float("inf")},
        {"arguments": {"k": "a\x00b"}},
        {"ttl_seconds": 86_401},
        {"kind": "token_cap"},  # the gate fields do not make a token cap
    ],
)
def test_anything_doubtful_is_left_to_the_serializer(change):
    body = {**GATE, **change}
    assert REGISTRATION_FAST_PATHS["gate"].validated(body) is None


def test_a_missing_required_field_and_a_failing_validate_are_left_to_the_serializer():
    gate = dict(GATE)
    del gate["caller"]
    assert REGISTRATION_FAST_PATHS["gate"].validated(gate) is None
    below_cap = {**TOKEN_CAP, "tokens_used": 9_999}
    assert REGISTRATION_FAST_PATHS["token_cap"].validated(below_cap) is None


def test_a_field_it_cannot_check_is_refused_when_the_fast_path_is_built():
    class WithEmail(serializers.Serializer):
        email = serializers.EmailField()

    with pytest.raises(TypeError, match="no fast check for EmailField"):
        SerializerFastPath(WithEmail)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3),
    max_leaves=8,
)
edge_values = st.sampled_from(
    ["", " ", "\x00", "\ud800", "é", "x" * 24, "x" * 25, "x" * 500, "x" * 501, 0, 1, -1, 86_400, 86_401, 2**31, 2**63]
    + ["gate", "token_cap", "turn", "workspace", None, True, 3.0]
)


def mutated(base: dict):
    keys = st.sampled_from(sorted(base) + ["unknown"])
    return st.fixed_dictionaries(
        {
            "drop": st.sets(keys, max_size=2),
            "change": st.dictionaries(keys, json_values | edge_values, max_size=3),
        }
    ).map(lambda m: {**{k: v for k, v in base.items() if k not in m["drop"]}, **m["change"]})


def plausible(base: dict):
    """Bodies most of which are valid: each value replaced by another of the same kind and size."""
    words = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_0123456789 é✓", min_size=1, max_size=20)
    values = {
        key: (st.integers(1, 86_400) if type(value) is int else json_values if key == "arguments" else words)
        for key, value in base.items()
        if key not in ("kind", "scope")
    }
    return st.fixed_dictionaries({key: st.just(value) for key, value in base.items()}).flatmap(
        lambda body: st.fixed_dictionaries({key: values.get(key, st.just(value)) for key, value in body.items()})
    )


# Recorded: with mutated bodies alone, one run accepted 25 of 400 (96 had no registration kind,
# 279 were left to the serializer), too few to hold the two together. With plausible bodies as
# well, one run (2026-11-30) accepted 222 of 400 — every body the serializer found valid — left
# 143 to the serializer and saw 35 without a kind. Fewer than this many accepted means the test
# stopped testing the fast path.
ACCEPTED_AT_LEAST = 100


def test_the_fast_path_never_accepts_what_the_serializer_refuses():
    seen = Counter()

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(st.one_of(mutated(GATE), mutated(TOKEN_CAP), plausible(GATE), plausible(TOKEN_CAP)))
    def check(body):
        kind = body.get("kind")
        if type(kind) is not str or kind not in REGISTRATION_FAST_PATHS:
            seen["not a registration kind"] += 1
            return
        fast = REGISTRATION_FAST_PATHS[kind].validated(body)
        expected = serializer_says(body)
        seen["valid for the serializer"] += expected is not None
        if fast is None:
            seen["left to the serializer"] += 1
        else:
            seen["accepted"] += 1
            assert fast == expected

    check()
    print(dict(seen))
    assert seen["accepted"] >= ACCEPTED_AT_LEAST, dict(seen)


def test_each_thread_validates_with_its_own_serializer_instance():
    fast_path = REGISTRATION_FAST_PATHS["gate"]
    here = fast_path.serializer
    there = []
    thread = threading.Thread(target=lambda: there.append(fast_path.serializer))
    thread.start()
    thread.join()
    assert fast_path.serializer is here and there[0] is not here
    assert fast_path.validated(GATE) == serializer_says(GATE)
