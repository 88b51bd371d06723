"""A registration is one statement that psycopg parses once per process, notify rule or not.

psycopg caches how it splits a statement (bound client-side, as Django's cursors do, or server-side,
as the registration's prepared statement is) only up to 50 parameters and 4,096 characters; past
that it re-parses the statement on every call, which cost a notified registration ≈400 µs of CPU — a
fifth of the request (bench/notify.py). These tests fail when a new column or CTE pushes the
statement past the cache.
"""

import pytest
from django.db import connection
from psycopg._queries import MAX_CACHED_STATEMENT_LENGTH, MAX_CACHED_STATEMENT_PARAMS

from contacts.models import Delivery
from contacts.services import contact_create

from ..helpers import make_rule, publish, register_gate

pytestmark = [pytest.mark.django_db]


def _insert_statement(world: dict, **fields) -> tuple[str, list]:
    seen = []

    def keep(execute, sql, params, many, context):
        if sql.lstrip().startswith("WITH"):
            seen.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        register_gate(world, **fields)
    [statement] = seen
    return statement


@pytest.mark.parametrize("contacts", [1, 3])
def test_a_notified_registration_stays_within_psycopgs_statement_cache(notified, contacts):
    names = [notified["hook"].public_id]
    for n in range(contacts - 1):
        extra = contact_create(
            config=notified["config"],
            name=f"Hook {n}",
            channel="webhook",
            channel_ref="${HITL_ACME_TEST_HOOK}",
            secret_ref="${HITL_ACME_TEST_HOOK_SECRET}",
        )
        names.append(extra.public_id)
    rule = make_rule(notified["config"], message="Many", order=60, notify=names)
    world = {**notified, "rule": rule, "version": publish(notified["config"])}

    sql, params = _insert_statement(world, run_id=f"run_{contacts}")

    assert len(params) <= MAX_CACHED_STATEMENT_PARAMS
    assert len(sql.encode()) <= MAX_CACHED_STATEMENT_LENGTH
    assert Delivery.objects.filter(event="requested", approval__run_id=f"run_{contacts}").count() == contacts


def test_a_plain_registration_stays_within_psycopgs_statement_cache(notified):
    plain = make_rule(notified["config"], message="Nobody to tell", order=70)
    world = {**notified, "rule": plain, "version": publish(notified["config"])}
    sql, params = _insert_statement(world)
    assert len(params) <= MAX_CACHED_STATEMENT_PARAMS
    assert len(sql.encode()) <= MAX_CACHED_STATEMENT_LENGTH


@pytest.mark.parametrize("notify", [False, True])
def test_a_registration_under_a_run_grant_rule_stays_within_psycopgs_statement_cache(notified, notify):
    """The grant lookup's form of the statement bound 55 values until a new request's constant columns
    (undecided, unreported) became literals."""
    names = [notified["hook"].public_id] if notify else []
    rule = make_rule(notified["config"], message="Grantable", order=80, allow_run_grant=True, notify=names)
    world = {**notified, "rule": rule, "version": publish(notified["config"])}
    sql, params = _insert_statement(world, run_id=f"run_grantable_{notify}")
    assert len(params) <= MAX_CACHED_STATEMENT_PARAMS
    assert len(sql.encode()) <= MAX_CACHED_STATEMENT_LENGTH
    assert Delivery.objects.filter(approval__run_id=f"run_grantable_{notify}").count() == len(names)


def test_the_registration_statement_is_prepared_once_and_run_from_then_on(notified):
    """approvals.engine.insert prepares its statement on the connection: parsed and planned once, not per call."""
    plain = make_rule(notified["config"], message="Prepared", order=90)
    world = {**notified, "rule": plain, "version": publish(notified["config"])}

    def runs() -> list[int]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT generic_plans + custom_plans FROM pg_prepared_statements"
                " WHERE statement LIKE '%INSERT INTO approvals_approvalrequest (%'"
            )
            return [row[0] for row in cursor.fetchall()]

    register_gate(world, run_id="run_prepared_1")
    [first] = runs()
    register_gate(world, run_id="run_prepared_2")
    assert runs() == [first + 1]
