"""The Approvals tab alone: 100 pending cards rendered in-process for a reviewer, DEBUG off, no load.

Not a `make bench` section (it needs no big table): a quick figure for template work.

    flock /tmp/hitl-bench.lock env BENCH_DATABASE_URL=postgres://…/hitl_bench_<you> \\
        .venv/bin/python -m bench.tab_render [--repeats 20] [--html out.html] [--partial-html out.html]

The database must exist (it is migrated here); the workspace "tabbench" is seeded once and reused,
so two runs render the same cards (compare their --html outputs with `--normalize`: CSRF tokens and
the "expires in" countdown differ between renders). Prints the median (and min/max) of the page and
of the htmx partial, their size and their query count.
"""

import argparse
import os
import re
import statistics
import sys
import time
from datetime import timedelta

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

SLUG = "tabbench"
CARDS = 100


def seed():
    """A reviewer and 100 pending cards of every shape the tab draws (gates, token caps, quorums, grants)."""
    from approvals.models import ApprovalRequest, Vote
    from tests.factories import make_approval, make_token_cap
    from tests.helpers import make_config, make_member, make_workspace
    from workspaces.models import Workspace

    workspace = Workspace.objects.filter(slug=SLUG).first()
    if workspace is not None:
        from django.contrib.auth import get_user_model

        return get_user_model().objects.get(email="reviewer@tabbench.test")
    workspace = make_workspace(SLUG)
    reviewer = make_member(workspace, "reviewer@tabbench.test", "reviewer")
    other = make_member(workspace, "other@tabbench.test", "reviewer")
    make_member(workspace, "admin@tabbench.test", "admin")
    config = make_config(workspace, "Support agent", pass_information_level="full")
    start = timezone.now() - timedelta(minutes=CARDS)
    boundaries = ["delete", "mcp_server", "cell", "worker", "delete"]
    rows = []
    for i in range(CARDS):
        at = start + timedelta(seconds=i)
        if i % 7 == 3:
            rows.append(make_token_cap(config, created_at=at, scope="workspace" if i % 2 else "turn", save=False))
            continue
        rows.append(
            make_approval(
                config,
                boundary=boundaries[i % len(boundaries)],
                target=f"crm/customers/{4000 + i}",
                operation="delete_record" if i % 3 else "",
                message="Check before deleting <a customer>" if i % 2 else "",
                summary=f"Delete customer {4000 + i} (duplicate of {3999 + i})\nasked by the support lead",
                arguments={"id": 4000 + i, "reason": "duplicate", "cascade": ["orders", "notes"], "dry_run": False},
                created_at=at,
                requested_by="reviewer@tabbench.test" if i % 11 == 5 else ("ops@tabbench.test" if i % 4 == 0 else ""),
                approvals_required=2 if i % 5 == 1 else 1,
                allow_run_grant=i % 3 == 0,
                run_id=f"run_{i // 4}",
                save=False,
            )
        )
    ApprovalRequest.objects.bulk_create(rows)
    # Half the quorum cards already have one vote (one by the reviewer: "You approved — waiting …").
    quorum = [row for row in rows if row.approvals_required > 1]
    for index, approval in enumerate(quorum[::2]):
        voter = reviewer if index % 2 else other
        Vote.objects.create(approval=approval, reviewer=voter, reviewer_email=voter.email)
    return reviewer


def normalize(html: str) -> str:
    """What differs between two renders of the same cards: CSRF tokens and countdowns."""
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', 'name="csrfmiddlewaretoken" value="…"', html)
    return re.sub(r"expires in [^<]*<", "expires in …<", html)


def measure(client: Client, path: str, repeats: int) -> tuple[list[float], list[float], int, int, str]:
    """Wall time and this process's CPU time (which other helpers' load on a shared machine inflates less)."""
    times, cpu, queries, html = [], [], 0, ""
    for i in range(repeats + 2):
        with CaptureQueriesContext(connection) as captured:
            t0, c0 = time.perf_counter(), time.process_time()
            response = client.get(path)
            elapsed, used = time.perf_counter() - t0, time.process_time() - c0
        assert response.status_code == 200, response.status_code
        if i >= 2:  # two warm-ups: templates compiled, connection open
            times.append(elapsed * 1000)
            cpu.append(used * 1000)
        queries, html = len(captured.captured_queries), response.content.decode()
    return times, cpu, queries, len(html.encode()), html


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--html", help="write the page's HTML here (normalized)")
    parser.add_argument("--partial-html", help="write the partial's HTML here (normalized)")
    parser.add_argument("--profile", action="store_true", help="cProfile 5 renders of the page, top 35 by own time")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    reviewer = seed()
    client = Client()
    client.force_login(reviewer)
    for name, path, out in (
        ("page", "/hitl/approvals/", args.html),
        ("partial", "/hitl/approvals/queue/", args.partial_html),
    ):
        times, cpu, queries, size, html = measure(client, path, args.repeats)
        cards = html.count('class="card approval')
        print(
            f"{name:8} {cards} cards: median {statistics.median(times):6.1f} ms"
            f" (min {min(times):.1f}, max {max(times):.1f}, n={len(times)}),"
            f" CPU median {statistics.median(cpu):.1f} ms, {size / 1024:.0f} KB, {queries} queries"
        )
        if out:
            with open(out, "w") as f:
                f.write(normalize(html))
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
        for _ in range(5):
            client.get("/hitl/approvals/")
        profiler.disable()
        pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(35)


if __name__ == "__main__":
    main()
