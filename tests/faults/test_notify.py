"""The cluster SIGKILLed in the middle of 500 webhook deliveries: every one arrives, repeats carry the same id."""

import signal
import time

from contacts.models import Delivery
from tests.contacts.conftest import hook_env, notified  # noqa: F401 — fixtures
from tests.helpers import register_gate
from tests.loopback import Cluster

from .conftest import wait_for

COUNT = 500


def test_every_delivery_arrives_after_the_cluster_is_killed_mid_send(notified, receiver, hook_env):  # noqa: F811
    cluster = Cluster(**hook_env, HITL_DELIVERY_LEASE_SECONDS="3")
    receiver.answer = lambda event: time.sleep(0.02) or 200  # a real endpoint takes a moment
    approvals = [register_gate(notified, run_id=f"run_{i}") for i in range(COUNT)]  # queued while no cluster runs
    cluster.start()
    try:
        wait_for(lambda: len(receiver.events()) >= COUNT // 5, timeout=60, what="a fifth of the deliveries")
        cluster.kill(signal.SIGKILL)
        arrived_before = len(receiver.events())
        assert arrived_before < COUNT, "the cluster finished before it could be killed: make the run longer"
        cluster.start()
        wait_for(
            lambda: len({e["subject"] for e in receiver.events("requested")}) >= COUNT,
            timeout=150,
            what="every request's delivery after the restart",
            every=0.5,
        )
        wait_for(
            lambda: not Delivery.objects.filter(event="requested").exclude(status="sent").exists(),
            timeout=60,
            what="every delivery recorded as sent (a killed worker's rows come due again after their lease)",
        )
    finally:
        cluster.stop()

    events = receiver.events("requested")
    ids_by_request: dict[str, set[str]] = {}
    for event in events:
        ids_by_request.setdefault(event["subject"], set()).add(event["id"])
    assert set(ids_by_request) == {a.public_id for a in approvals}  # every one arrived
    assert all(len(ids) == 1 for ids in ids_by_request.values())  # none with two ids
    # A repeat is the same delivery again, the same id (for receivers to deduplicate).
    rows = dict(Delivery.objects.filter(event="requested").values_list("public_id", "approval__public_id"))
    assert all(rows[e["id"]] == e["subject"] for e in events)
    assert receiver.bad_signatures == 0
