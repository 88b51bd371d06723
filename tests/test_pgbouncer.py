"""The portal through a real PgBouncer in transaction mode (docs/deploy.md): registration, a long-poll,
a decision and the outbox (sent by a real django-q2 cluster), with the wait hub LISTENing direct."""

import threading
import time

import pytest
import requests
from hitl_client import HitlClient

from contacts.models import Delivery
from tests.asgi import AsgiServer
from tests.contacts.conftest import hook_env, notified  # noqa: F401 — fixtures
from tests.helpers import GATE, make_token
from tests.loopback import Cluster, database_url, wait_for
from tests.proxies import PgBouncer

COUNT = 12  # more than prepare_threshold's 5: a statement psycopg prepared would fail on another server connection


def _body(world: dict, run: int) -> dict:
    return {
        **GATE,
        "run_id": f"run_{run}",
        "config_id": world["config"].public_id,
        "config_version": world["version"].number,
        "rule_id": world["rule"].public_id,
    }


@pytest.mark.django_db(transaction=True)  # the server and the cluster see what the test commits
def test_registration_long_poll_decision_and_outbox_through_pgbouncer(notified, receiver, hook_env):  # noqa: F811
    engine = make_token(notified["workspace"], engine="pooled-engine")
    reviewer = make_token(notified["workspace"], user=notified["bob"])
    pooled = {"HITL_DB_TRANSACTION_POOLER": "true", "HITL_LISTEN_DATABASE_URL": database_url(), **hook_env}
    with PgBouncer(database_url()) as bouncer, AsgiServer(database=bouncer.url, workers=1, **pooled) as server:
        cluster = Cluster(DATABASE_URL=bouncer.url, **pooled).start()
        try:
            client = HitlClient(server.url, engine, retry_for=0)
            ids = [client.register(_body(notified, run), f"key-{run}")["id"] for run in range(COUNT)]
            assert client.register(_body(notified, 0), "key-0")["id"] == ids[0]  # the same key, the same request
            # Every reviewer told before anyone decides: the outbox skips what is decided before its turn.
            receiver.wait_for(COUNT, "requested", timeout=30)
            answers: dict[str, tuple[str, float]] = {}

            def wait(public_id: str) -> None:
                answer = client.wait(public_id, timeout=25)
                answers[public_id] = (answer["status"], time.monotonic())

            waits = [threading.Thread(target=wait, args=(public_id,)) for public_id in ids]
            for thread in waits:
                thread.start()
            time.sleep(1)  # every long-poll held
            decided_at = time.monotonic()
            for public_id in ids:
                response = requests.post(
                    f"{server.url}/api/v1/approvals/{public_id}/decision",
                    json={"decision": "approve"},
                    headers={"Authorization": f"Bearer {reviewer}"},
                    timeout=30,
                )
                assert response.status_code == 200, response.text
            for thread in waits:
                thread.join(30)
            assert {status for status, _ in answers.values()} == {"approved"} and len(answers) == COUNT
            # Woken by the NOTIFY its hub heard on the direct connection (through PgBouncer it would hear
            # nothing, and wait out its 25 s).
            assert max(at for _, at in answers.values()) - decided_at < 10

            wait_for(
                lambda: not Delivery.objects.filter(approval__public_id__in=ids).exclude(status="sent").exists(),
                timeout=60,
                what="every delivery recorded as sent by the cluster through PgBouncer",
            )
            assert {event["subject"] for event in receiver.events("requested")} == set(ids)
            assert receiver.bad_signatures == 0
        finally:
            cluster.stop()
