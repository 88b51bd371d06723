"""The registration fast path accepts only what the serializers accept, and returns exactly their data.

The serializers stay the source of the rules and the error messages; these tests hold the fast path
to them over generated bodies, so a rule added to a serializer and missed by the fast path fails here.
"""

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


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(mutated(GATE), mutated(TOKEN_CAP)))
def test_the_fast_path_never_accepts_what_the_serializer_refuses(body):
    kind = body.get("kind")
    if type(kind) is not str or kind not in REGISTRATION_FAST_PATHS:
        return
    fast = REGISTRATION_FAST_PATHS[kind].validated(body)
    if fast is not None:
        assert fast == serializer_says(body)
