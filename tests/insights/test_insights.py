"""The Insights page: what a governance lead asks for, from SQL aggregates, in a bounded number of queries."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from insights.models import DailyRollup, RolledUpDay
from tests.factories import make_approval
from tests.helpers import make_config, make_member

PAGE = "/hitl/insights/"

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def _no_page_cache(request, settings):
    """The page is cached for a minute; these tests read it fresh (but for the test of the cache)."""
    if "cached" not in request.node.name:
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}


def decided(config, *, days_ago: float, status: str, seconds: float, by: str = "bob@acme.test", **fields):
    created = timezone.now() - timedelta(days=days_ago)
    return make_approval(
        config,
        created_at=created,
        status=status,
        decided_at=created + timedelta(seconds=seconds),
        decided_by_email=by,
        decision_action="resume" if status == "approved" else "halt",
        **fields,
    )


@pytest.fixture
def history(acme, bob):
    support = make_config(acme, "Support agent")
    billing = make_config(acme, "Billing agent")
    decided(support, days_ago=3, status="approved", seconds=2)  # a rubber stamp
    decided(support, days_ago=3, status="rejected", seconds=600, reason="no")
    decided(billing, days_ago=3, status="approved", seconds=120, by="dave@acme.test", execution_status="failed")
    decided(support, days_ago=1, status="approved", seconds=30)
    make_approval(support, created_at=timezone.now() - timedelta(days=5), ttl=timedelta(hours=1))  # expired, unswept
    make_approval(support, created_at=timezone.now() - timedelta(hours=2))  # pending
    make_approval(billing, created_at=timezone.now() - timedelta(minutes=5))  # pending
    return support, billing


def test_an_admin_sees_the_workspace_at_a_glance(client, alice, history):
    client.force_login(alice)
    html = client.get(PAGE).content.decode()

    tile = html[html.index('id="tile-pending"') :]
    assert '<div class="figure">2</div>' in tile[:300] and "oldest waiting 2.0 h" in tile[:400]
    assert '<div class="figure">1</div>' in html[html.index('id="tile-rubber"') :][:300]  # the 2-second approval
    assert '<div class="figure">1</div>' in html[html.index('id="tile-failed"') :][:300]
    assert "of 3 approved calls" in html
    # The charts are SVG drawn here, each mark titled with its figure.
    assert "<svg" in html and "cdn" not in html.lower()
    assert "2 approved, 1 rejected, 0 expired" in html  # three days ago
    assert "0 approved, 0 rejected, 1 expired" in html  # five days ago: overdue counts as expired
    assert "Support agent: 2 approved, 1 rejected, 1 expired" in html
    assert "dave@acme.test: 1 approved" in html
    assert "p50: 2 min" in html  # three days ago: the median of 2 s, 120 s and 600 s
    assert "p90: 8 min" in html  # percentile_cont: 120 + 0.8 × (600 − 120) = 504 s


def test_a_reviewer_sees_only_their_own_decisions(client, bob, history):
    client.force_login(bob)
    html = client.get(PAGE).content.decode()

    assert "your own decisions, bob@acme.test" in html
    assert "dave@acme.test" not in html
    assert "1 approved, 1 rejected, 0 expired" in html  # three days ago, bob's two
    assert "By reviewer" not in html


def test_closed_days_are_aggregated_once_and_kept(client, alice, acme, history):
    client.force_login(alice)
    client.get(PAGE)
    rows = DailyRollup.objects.filter(workspace=acme).count()
    assert RolledUpDay.objects.filter(workspace=acme).count() == 28  # 30 days but the two still open
    assert rows > 0

    client.get(PAGE)
    assert DailyRollup.objects.filter(workspace=acme).count() == rows


def test_the_page_runs_the_same_queries_however_much_history_there_is(client, alice, history):
    support, _ = history
    client.force_login(alice)
    client.get(PAGE)  # roll up the closed days
    with CaptureQueriesContext(connection) as few:
        client.get(PAGE)
    for n in range(40):
        decided(support, days_ago=1 + n % 20, status="approved", seconds=n)
    make_config(support.workspace, "Third agent")
    client.get(PAGE)
    with CaptureQueriesContext(connection) as many:
        client.get(PAGE)
    assert len(many) == len(few), [q["sql"][:80] for q in many]


def test_another_workspace_is_not_counted(client, globex, charlie, history):
    client.force_login(charlie)
    html = client.get(PAGE).content.decode()
    assert '<div class="figure">0</div>' in html[html.index('id="tile-pending"') :][:300]
    assert "Support agent" not in html


def test_a_free_workspace_shows_the_plan_notice(client, db):
    from tests.helpers import make_workspace

    hobby = make_workspace("hobby", plan="free")
    user = make_member(hobby, "hal@hobby.test", "admin")
    client.force_login(user)
    response = client.get(PAGE)
    assert response.status_code == 200
    assert "<svg" not in response.content.decode()


def test_the_sqlite_fallback_computes_what_postgresql_computes(acme, history):
    from datetime import UTC

    from insights.selectors import _aggregate_in_python, _midnight, aggregate

    now = timezone.now()
    first, last = (now - timedelta(days=10)).astimezone(UTC).date(), now.astimezone(UTC).date()
    in_sql = aggregate(workspace_id=acme.pk, first=first, last=last, now=now)
    in_python = _aggregate_in_python(
        workspace=acme.pk, start=_midnight(first), end=_midnight(last + timedelta(days=1)), now=now
    )

    def key(row: dict) -> tuple:
        return tuple(str(row[field]) for field in ("day", "grain", "outcome", "config_id", "rule_id", "reviewer"))

    def rounded(row: dict) -> dict:
        return {k: round(v, 6) if isinstance(v, float) else v for k, v in row.items()}

    assert sorted(map(key, in_sql)) == sorted(map(key, in_python))
    python_by_key = {key(row): rounded(row) for row in in_python}
    for row in in_sql:
        assert rounded(row) == python_by_key[key(row)], row


def test_the_page_is_cached_for_the_minute(client, alice, history, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "insights"}}
    client.force_login(alice)
    with CaptureQueriesContext(connection) as first:
        client.get(PAGE)
    with CaptureQueriesContext(connection) as second:
        html = client.get(PAGE).content.decode()
    assert len(second) < len(first)
    assert "2 approved, 1 rejected, 0 expired" in html
