"""What every bench section shares: the throwaway database, Django, the benchmark's workspace, the run's state."""

import argparse
import os
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", flush=True)


def recreate_database(url: str) -> None:
    parts = urllib.parse.urlparse(url)
    name = parts.path.lstrip("/")
    admin_url = parts._replace(path="/postgres", scheme="postgresql").geturl()
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        )
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')


def setup_django(url: str) -> None:
    os.environ["BENCH_DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "bench.settings"
    if not os.environ.get("HITL_RECEIPT_KEY"):
        # DEBUG is off, as deployed: receipts need a key; this run's own (the server inherits it).
        from approvals.receipts.keys import new_private_pem

        os.environ["HITL_RECEIPT_KEY"] = new_private_pem()
    import django

    django.setup()


def sql(statement: str, params=None) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.rowcount


def vacuum() -> None:
    sql("VACUUM ANALYZE approvals_approvalrequest")


class World:
    """The benchmark's workspace: Pro, a reviewer, an engine key, a published config gating every delete."""

    def __init__(self) -> None:
        from rules.services import config_create, config_publish, config_update, rule_create
        from workspaces.models import ApiToken
        from workspaces.services import member_add, token_create, workspace_create

        self.workspace = workspace_create(slug="bench", plan="pro", name="Bench")
        self.reviewer = member_add(
            workspace=self.workspace, email="reviewer@bench.test", role="reviewer", password="Bench reviewer, 2 cores!"
        ).user
        self.config = config_create(workspace=self.workspace, name="Bench agent")
        config_update(config=self.config, pass_information_level="summary")
        self.rule = rule_create(config=self.config, message="Check before deleting")
        self.version = config_publish(config=self.config, user=None, note="bench")
        _, self.engine_token = token_create(workspace=self.workspace, engine_name="bench-engine")
        self.engine_key = ApiToken.objects.get(workspace=self.workspace, kind="engine")

    def registration_body(self) -> dict:
        return {
            "kind": "gate",
            "config_id": self.config.public_id,
            "config_version": self.version.number,
            "rule_id": self.rule.public_id,
            "run_id": "run_bench",
            "thread_id": "thr_bench",
            "caller": "support-agent",
            "target": "crm/customers/42",
            "operation": "delete_record",
            "summary": "Delete customer 42 (duplicate of 41)",
        }

    def seed(self, *, count: int, status: str, tag: str, created_from: datetime, step_ms: int, ttl_s: int) -> None:
        from django.db import connection

        from bench.seed import insert_requests

        with connection.cursor() as cursor:
            insert_requests(
                cursor,
                workspace_id=self.workspace.pk,
                config_id=self.config.pk,
                config_version=self.version.number,
                rule_id=self.rule.public_id,
                engine_key_id=self.engine_key.pk,
                count=count,
                status=status,
                created_from=created_from,
                created_step_ms=step_ms,
                expires_after_s=ttl_s,
                tag=tag,
                decided_by_id=self.reviewer.pk,
                decided_by_email=self.reviewer.email,
            )


@dataclass
class Bench:
    """One run: its options, its workspace, and `results` (written to bench/results/latest.json)."""

    args: argparse.Namespace
    world: World
    total: int
    pending: int
    duration: float
    rounds: int
    results: dict
    pending_ids: list[str] = field(default_factory=list)  # the seeded pending requests, shuffled
    ids_file: Path = RESULTS / "poll-ids.txt"  # the first 5,000 of them, for the load generator


# A section: measures, keeps its raw figures in `bench.results[<its name>]`, returns its table rows.
Section = Callable[[Bench], list[dict]]
