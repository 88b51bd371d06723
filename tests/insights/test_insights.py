"""The Insights page: what a governance lead asks for, from SQL aggregates, in a fixed number of queries."""

from datetime import UTC, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from approvals.engine.outcome import approval_report_outcome
from contacts.models import Delivery
from insights import rollup
from insights.models import DailyPercentiles, DayRollup, HourlyRollup, HourlyTimes, RollupMark
from insights.selectors import facts_for
from tests.factories import make_approval
from tests.helpers import make_config, make_member

from .direct import facts_directly

PAGE = "/hitl/insights/"


@pytest.fixture(autouse=True)
def _no_page_cache(request, settings):
    """The page is cached for a minute; these tests read it fresh (but for the test of the cache)."""
    if "cached" not in request.node.name:
        settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"}}


def noon(days_ago: int):
    """Midday of a past UTC day: a request made then and decided within minutes stays in that day."""
    return rollup.midnight(timezone.now().astimezone(UTC).date() - timedelta(days=days_ago)) + timedelta(hours=12)


def decided(config, *, created, status: str, seconds: float, by: str = "bob@acme.test", **fields):
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
    decided(support, created=noon(3), status="approved", seconds=2)  # a rubber stamp
    decided(support, created=noon(3), status="rejected", seconds=600, reason="no")
    decided(billing, created=noon(3), status="approved", seconds=120, by="dave@acme.test", execution_status="failed")
    decided(support, created=noon(1), status="approved", seconds=30)
    make_approval(support, created_at=noon(5), ttl=timedelta(hours=1))  # expired, unswept
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
    assert "p50: 2 min" in html  # three days ago, exact: the median of 2 s, 120 s and 600 s
    assert "p90: 8 min" in html  # percentile_cont: 120 + 0.8 × (600 − 120) = 504 s
    # Yesterday's single decision (30 s) in the "last 2 days" tile, read from the histogram (±2.5 %).
    tile = html[html.index('id="tile-time"') :][:300]
    assert any(f'<div class="figure">≈{s} s</div>' in tile for s in (29, 30, 31)), tile


def test_a_reviewer_sees_only_their_own_decisions(client, bob, history):
    client.force_login(bob)
    html = client.get(PAGE).content.decode()

    assert "your own decisions, bob@acme.test" in html
    assert "dave@acme.test" not in html
    assert "1 approved, 1 rejected, 0 expired" in html  # three days ago, bob's two
    assert "p50: 5 min" in html  # bob's own: 2 s and 600 s → 301 s
    assert "By reviewer" not in html
    assert "delivery health" not in html.lower()


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


def test_the_page_is_cached_for_the_minute(client, alice, history, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "insights"}}
    client.force_login(alice)
    with CaptureQueriesContext(connection) as first:
        client.get(PAGE)
    with CaptureQueriesContext(connection) as second:
        html = client.get(PAGE).content.decode()
    assert len(second) < len(first)
    assert "2 approved, 1 rejected, 0 expired" in html


# --- The rollups against a direct computation ---------------------------------------------------


@pytest.fixture
def busy(acme, bob):
    """Requests resolved over the window: closed days, yesterday, today's closed hours and this hour.

    Times to decision spread from 0.5 s to 5 h; three reviewers; failures; swept and unswept expiries.
    """
    support = make_config(acme, "Support agent")
    billing = make_config(acme, "Billing agent")
    now = timezone.now()
    reviewers = ("bob@acme.test", "dave@acme.test", "erin@acme.test")
    for n in range(240):
        config = support if n % 3 else billing
        created = now - timedelta(minutes=17 * n + 3)  # every 17 minutes over about 2.8 days
        seconds = (0.5, 3, 45, 200, 1300, 18000)[n % 6] * (1 + n % 7 / 10)
        if created + timedelta(seconds=seconds) >= now:
            seconds = 1  # decided already
        status = "rejected" if n % 5 == 0 else "approved"
        decided(
            config,
            created=created,
            status=status,
            seconds=seconds,
            by=reviewers[n % 3],
            rule_id=f"rul_{n % 4}",
            execution_status="failed" if status == "approved" and n % 11 == 0 else "",
        )
    for n in range(30):  # expiries: overdue but unswept, and swept (decided_at = expires_at)
        created = now - timedelta(hours=3 * n + 2)
        if n % 2:
            make_approval(support, created_at=created, ttl=timedelta(hours=1))
        else:
            make_approval(
                support,
                created_at=created,
                ttl=timedelta(hours=1),
                status="expired",
                decided_at=created + timedelta(hours=1),
            )
    for days_ago in range(4, 29, 3):  # older closed days
        for seconds in (4, 90, 700):
            decided(support, created=noon(days_ago), status="approved", seconds=seconds)
    make_approval(support, created_at=now - timedelta(minutes=1))  # still waiting: in no figure
    return now


def _summed(rows: list[dict]) -> dict:
    """Rows keyed by (day, outcome, config, rule, reviewer); the rollups split a day into closed hours and live."""
    sums: dict[tuple, list] = {}
    for row in rows:
        key = tuple(row[k] for k in ("day", "outcome", "config_id", "rule_id", "reviewer"))
        total = sums.setdefault(key, [0, 0, 0, 0.0])
        for index, name in enumerate(("count", "fast", "failed", "seconds")):
            total[index] += row[name]
    return {key: (c, f, x, round(s, 6)) for key, (c, f, x, s) in sums.items()}


def _assert_same_numbers(rolled, direct) -> None:
    assert _summed(rolled.rows) == _summed(direct.rows)
    assert set(rolled.percentiles) == set(direct.percentiles)
    for day, (p50, p90) in direct.percentiles.items():
        if day in rolled.approximate:  # read from the histogram: within ±2.5 %
            assert rolled.percentiles[day][0] == pytest.approx(p50, rel=0.025, abs=0.05), day
            assert rolled.percentiles[day][1] == pytest.approx(p90, rel=0.025, abs=0.05), day
        else:  # a closed day: exact
            assert rolled.percentiles[day] == pytest.approx((p50, p90), rel=1e-9), day
    assert rolled.recent == pytest.approx(direct.recent, rel=0.025, abs=0.05)


@pytest.mark.parametrize("reviewer", [None, "bob@acme.test"])
def test_the_rollups_give_the_numbers_a_direct_computation_gives(acme, busy, reviewer):
    now = busy
    rolled = facts_for(workspace_id=acme.pk, reviewer=reviewer, now=now)
    direct = facts_directly(workspace_id=acme.pk, reviewer=reviewer, now=now)

    assert sum(row["count"] for row in direct.rows) > (60 if reviewer else 200)
    _assert_same_numbers(rolled, direct)
    # The closed days are exact (read from DailyPercentiles), today from histograms.
    today = now.astimezone(UTC).date()
    assert today in rolled.approximate and today - timedelta(days=3) not in rolled.approximate
    assert RollupMark.objects.get(workspace=acme).rolled_up_to == rollup.closed_until(now)


def test_rolling_up_later_hours_keeps_the_numbers_right(acme, busy):
    """The mark moves an hour (or three) at a time; the numbers match a direct computation at each step."""
    for later in (timedelta(0), timedelta(hours=1), timedelta(hours=4), timedelta(hours=4, minutes=30)):
        now = busy + later
        rolled = facts_for(workspace_id=acme.pk, reviewer=None, now=now)
        _assert_same_numbers(rolled, facts_directly(workspace_id=acme.pk, reviewer=None, now=now))


def _snapshot(workspace) -> list:
    return [
        sorted(model.objects.filter(workspace=workspace).values_list(*fields))
        for model, fields in (
            (HourlyRollup, ("hour", "outcome", "config_id", "rule_id", "reviewer", "count", "fast", "failed")),
            (HourlyTimes, ("hour", "reviewer", "bucket", "count")),
            (DayRollup, ("day", "outcome", "config_id", "rule_id", "reviewer", "count", "fast", "failed")),
            (DailyPercentiles, ("day", "everyone", "reviewer", "decisions", "p50", "p90")),
        )
    ]


def test_rolling_up_is_idempotent(acme, busy):
    now = busy
    mark = rollup.roll_up(workspace_id=acme.pk, now=now)
    rows = _snapshot(acme)
    assert all(rows) and mark == rollup.closed_until(now)

    # Again, later in the same hour, and with an older clock (a slow worker): nothing changes. "Later"
    # stays before the next hour closes (GRACE past it): run in the half-minute before, it crossed.
    next_closing = rollup.closed_until(now) + timedelta(hours=1) + rollup.GRACE
    later = min(now + timedelta(seconds=30), next_closing - timedelta(microseconds=1))
    for again in (now, later, now - timedelta(hours=2)):
        assert rollup.roll_up(workspace_id=acme.pk, now=again) == mark
        assert _snapshot(acme) == rows

    # A roll-up that finds the mark behind (the schedule and a page view racing: the loser read
    # the mark before the winner moved it) locks the mark row, rereads it and does nothing.
    RollupMark.objects.filter(workspace=acme).update(rolled_up_to=mark)
    assert rollup.roll_up(workspace_id=acme.pk, now=now) == mark
    assert _snapshot(acme) == rows


def test_a_failure_reported_after_its_hour_was_rolled_up_is_counted(acme, bob):
    support = make_config(acme, "Support agent")
    now = timezone.now()
    approval = decided(support, created=now - timedelta(hours=3), status="approved", seconds=60)
    rollup.roll_up(workspace_id=acme.pk, now=now)
    assert HourlyRollup.objects.get(workspace=acme, outcome="approved").failed == 0

    approval_report_outcome(approval=approval, status="failed", detail="HTTP 500")
    rollup.roll_up(workspace_id=acme.pk, now=now + timedelta(hours=1))
    assert HourlyRollup.objects.get(workspace=acme, outcome="approved").failed == 1


def test_a_late_failure_reaches_a_day_already_closed(acme, bob):
    """Approved at 23:30, the day closes at midnight, the failure is reported after: the closed day counts it."""
    support = make_config(acme, "Support agent")
    at = rollup.midnight(timezone.now().astimezone(UTC).date()) + timedelta(hours=1, minutes=30)  # 01:30 today
    approval = decided(support, created=at - timedelta(hours=2, minutes=1), status="approved", seconds=60)
    rollup.roll_up(workspace_id=acme.pk, now=at)
    assert DayRollup.objects.get(workspace=acme, outcome="approved").failed == 0

    approval_report_outcome(approval=approval, status="failed", detail="HTTP 500")
    later = at + timedelta(hours=1)
    rollup.roll_up(workspace_id=acme.pk, now=later)
    assert DayRollup.objects.get(workspace=acme, outcome="approved").failed == 1
    _assert_same_numbers(
        facts_for(workspace_id=acme.pk, reviewer=None, now=later),
        facts_directly(workspace_id=acme.pk, reviewer=None, now=later),
    )


def test_the_page_runs_the_same_queries_however_much_history_there_is(client, alice, history):
    support, _ = history
    client.force_login(alice)
    client.get(PAGE)  # roll up the closed hours
    with CaptureQueriesContext(connection) as few:
        client.get(PAGE)
    now = timezone.now()
    for n in range(40):  # more in this hour, and more reviewers and rules
        created = now - timedelta(seconds=n + 5)  # decided 5 s ago: this hour, aggregated live
        decided(support, created=created, status="approved", seconds=n, by=f"r{n}@acme.test")
        decided(support, created=created, status="rejected", seconds=n, rule_id=f"rul_{n}")
    make_config(support.workspace, "Third agent")
    with CaptureQueriesContext(connection) as many:
        html = client.get(PAGE).content.decode()
    assert "40 approved, 40 rejected, 0 expired" in html  # today's bar: counted, live
    assert len(many) == len(few), [q["sql"][:80] for q in many]


# --- Notification delivery health ----------------------------------------------------------------


def _delivery(acme, *, name: str, channel: str, status: str, attempts: int, last_error: str = "", ago=None):
    created = timezone.now() - (ago or timedelta(hours=1))
    return Delivery.objects.create(
        workspace=acme,
        contact_public_id=f"con_{name.lower().replace(' ', '')}",
        recipient={
            "id": "con_x",
            "name": name,
            "channel": channel,
            "channel_ref": "${HITL_ACME_ONCALL_URL}",
            "secret_ref": "${HITL_ACME_ONCALL_SECRET}",
        },
        event="test",
        channel=channel,
        status=status,
        attempts=attempts,
        last_error=last_error,
        next_attempt_at=created,
        created_at=created,
    )


def test_an_admin_sees_how_notifications_are_delivered(client, alice, bob, acme):
    for attempts in (1, 1, 2, 3):
        _delivery(acme, name="Ops webhook", channel="webhook", status="sent", attempts=attempts)
    _delivery(
        acme,
        name="Ops webhook",
        channel="webhook",
        status="failed",
        attempts=8,
        last_error="HTTP 503 after 8 attempts",
        ago=timedelta(minutes=10),
    )
    _delivery(
        acme, name="Finance inbox", channel="email", status="failed", attempts=1, last_error="HITL_FIN_ADDR unset"
    )
    _delivery(acme, name="Finance inbox", channel="email", status="pending", attempts=0)
    # Before the window: not counted.
    _delivery(acme, name="Old", channel="email", status="failed", attempts=1, ago=timedelta(days=40))
    client.force_login(alice)
    html = client.get(PAGE).content.decode()

    section = html[html.index('id="delivery-health"') :]
    webhook = section[section.index('id="health-webhook"') :].split("</tr>")[0]
    cells = [cell.split("</td>")[0] for cell in webhook.split("<td>")[1:]]
    assert cells == ["Webhook", "4", "1", "0", "0", "20.0%", "2"]  # attempts 1, 1, 2, 3, 8 → median 2
    email = section[section.index('id="health-email"') :].split("</tr>")[0]
    assert [cell.split("</td>")[0] for cell in email.split("<td>")[1:]] == ["Email", "0", "1", "1", "0", "100.0%", "1"]
    failures = section[section.index('id="recent-failures"') :]
    # Newest first, by contact name and error: never the address reference or the secret.
    assert failures.index("Ops webhook") < failures.index("Finance inbox")  # 10 minutes ago, then an hour ago
    assert "HITL_FIN_ADDR unset" in failures and "HTTP 503 after 8 attempts" in failures
    assert "HITL_ACME_ONCALL_URL" not in html and "HITL_ACME_ONCALL_SECRET" not in html
    assert "Old" not in failures

    client.force_login(bob)
    assert "delivery-health" not in client.get(PAGE).content.decode()


def test_no_deliveries_say_so(client, alice, acme):
    client.force_login(alice)
    assert "No notifications were sent in these 30 days." in client.get(PAGE).content.decode()


def test_a_long_queue_is_counted_up_to_a_bound(client, alice, history, monkeypatch):
    """Counting 100,000 waiting requests would cost more than the rest of the page: past the bound it says so."""
    from insights import selectors

    monkeypatch.setattr(selectors, "PENDING_COUNTED", 3)
    client.force_login(alice)
    tile = client.get(PAGE).content.decode().split('id="tile-pending"')[1][:400]
    assert '<div class="figure">2</div>' in tile  # within the bound: exact

    make_approval(history[0], created_at=timezone.now() - timedelta(minutes=1))
    make_approval(history[0], created_at=timezone.now() - timedelta(minutes=1))
    tile = client.get(PAGE).content.decode().split('id="tile-pending"')[1][:400]
    assert '<div class="figure">more than 3</div>' in tile and "oldest waiting 2.0 h" in tile


def test_the_schedule_rolls_up_each_paying_workspace(acme, busy):
    from django_q.models import Schedule

    from insights.tasks import roll_up_all
    from tests.helpers import make_workspace

    make_workspace("hobby", plan="free")
    schedule = Schedule.objects.get(func="insights.tasks.roll_up_all")
    assert (schedule.schedule_type, schedule.minutes, schedule.repeats) == (Schedule.MINUTES, 5, -1)
    assert roll_up_all() == 1  # acme; the free workspace has no insights
    assert RollupMark.objects.get(workspace=acme).rolled_up_to == rollup.closed_until(timezone.now())
    assert HourlyRollup.objects.filter(workspace=acme).exists()


def test_by_rule_names_each_rule_by_its_kind_match_and_message_not_its_id(client, alice, acme):
    from tests.helpers import make_rule

    support = make_config(acme, "Support agent")
    rule = make_rule(support, kind="delete", match="crm/customers/*", message="Check the customer first")
    decided(support, created=noon(2), status="approved", seconds=40, rule_id=rule.public_id)
    decided(support, created=noon(2), status="rejected", seconds=40, rule_id="rul_gone")
    client.force_login(alice)

    html = client.get(PAGE).content.decode()

    section = html[html.index('id="by-rule"') :]
    section = section[: section.index("</section>")]
    row = section[section.index(f'data-rule="{rule.public_id}"') :]
    assert "Delete" in row[:400] and "crm/customers/*" in row[:400] and "Check the customer first" in row[:600]
    assert "a rule since deleted" in section
    # The id names the row for scripts (data-rule); the reader never sees it.
    visible = section.replace(f'data-rule="{rule.public_id}"', "").replace('data-rule="rul_gone"', "")
    assert rule.public_id not in visible and "rul_gone" not in visible


def test_by_rule_names_questions_plans_and_token_caps_as_such(client, alice, acme):
    support = make_config(acme, "Support agent")
    decided(support, created=noon(2), status="approved", seconds=40, kind="plan", rule_id="")
    make_approval(support, kind="question", rule_id="", created_at=noon(3), ttl=timedelta(hours=1))  # expired
    decided(support, created=noon(2), status="approved", seconds=40, kind="token_cap", rule_id="")
    client.force_login(alice)

    html = client.get(PAGE).content.decode()

    section = html[html.index('id="by-rule"') :]
    section = section[: section.index("</section>")]
    assert "<td>Plans</td>" in section and "<td>Questions</td>" in section and "<td>Token caps</td>" in section
    rows = section.split("<tr")
    assert any("<td>Plans</td>" in row and '<td class="num">1</td>' in row for row in rows)


def test_by_rule_tells_same_named_rules_of_two_configs_apart_by_their_config(client, alice, acme):
    from tests.helpers import make_rule

    support, billing = make_config(acme, "Support agent"), make_config(acme, "Billing agent")
    mine = make_rule(support, kind="delete", match="drop_table", message="Tables are final")
    theirs = make_rule(billing, kind="delete", match="drop_table", message="Tables are final")
    decided(support, created=noon(2), status="approved", seconds=40, rule_id=mine.public_id)
    decided(billing, created=noon(2), status="rejected", seconds=40, rule_id=theirs.public_id)
    client.force_login(alice)

    html = client.get(PAGE).content.decode()

    section = html[html.index('id="by-rule"') :]
    row = section[section.index(f'data-rule="{mine.public_id}"') :][:600]
    assert "<td>Support agent</td>" in row
    row = section[section.index(f'data-rule="{theirs.public_id}"') :][:600]
    assert "<td>Billing agent</td>" in row
    assert "drop_table (Support agent)" in section and "drop_table (Billing agent)" in section  # the chart's labels


def test_no_tile_says_a_window_other_than_its_own(client, alice, history):
    client.force_login(alice)

    html = client.get(PAGE).content.decode()

    assert "last 2 days" not in html
    assert "Time to decision, yesterday and today" in html
