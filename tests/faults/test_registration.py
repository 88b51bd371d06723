"""Registration while the database drops the server's connections: engines retry with their keys."""

import threading
import time

import requests

from approvals.models import ApprovalRequest

from .conftest import SERVER_APP_NAME, raw_connection

ENGINES = 6
REQUESTS_PER_ENGINE = 50
# Five times a second the database drops all of the portal's connections: often enough to hit requests in
# flight (and commits whose answer is lost), rarely enough that a retry gets through on a loaded machine.
KILL_EVERY_S = 0.2
ATTEMPTS = 60


def body(world, engine: int, n: int) -> dict:
    return {
        "kind": "gate",
        "config_id": world["config"].public_id,
        "config_version": world["version"].number,
        "rule_id": world["rule"].public_id,
        "run_id": f"run_{engine}_{n}",
        "thread_id": f"thr_{engine}",
        "caller": "support-agent",
        "target": f"crm/customers/{engine}-{n}",
        "operation": "delete_record",
        "summary": f"Delete customer {engine}-{n}",
    }


def test_it_stores_each_request_once_when_connections_die_during_a_burst(world, portal_server):
    stop = threading.Event()
    terminated = []

    def terminator():
        # Kill every connection the portal holds, over and over, while the engines register.
        with raw_connection() as conn:
            while not stop.is_set():
                rows = conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s"
                    " AND pid <> pg_backend_pid()",
                    [SERVER_APP_NAME],
                ).fetchall()
                terminated.append(len(rows))
                time.sleep(KILL_EVERY_S)

    results: dict[str, list[dict]] = {}
    failures: list[str] = []
    retried = []

    def engine(e: int):
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {world['engine_token']}"
        for n in range(REQUESTS_PER_ENGINE):
            key = f"engine-{e}-request-{n}"
            for attempt in range(ATTEMPTS):
                try:
                    response = session.post(
                        f"{portal_server}/api/v1/approvals",
                        json=body(world, e, n),
                        headers={"Idempotency-Key": key},
                        timeout=30,
                    )
                except requests.ConnectionError:
                    response = None
                if response is not None and response.status_code in (200, 201):
                    results.setdefault(key, []).append(response.json())
                    break
                if response is not None and response.status_code < 500:
                    failures.append(f"{key}: {response.status_code} {response.text[:300]}")
                    break
                retried.append(key)
                time.sleep(min(0.02 * (attempt + 1), 0.3))  # back off, then retry with the same key
            else:
                failures.append(f"{key}: still failing after {ATTEMPTS} attempts")

    killer = threading.Thread(target=terminator)
    killer.start()
    try:
        engines = [threading.Thread(target=engine, args=(e,)) for e in range(ENGINES)]
        for thread in engines:
            thread.start()
        for thread in engines:
            thread.join(timeout=240)
    finally:
        stop.set()
        killer.join(timeout=10)

    assert not failures, failures[:5]
    assert sum(terminated) > 0 and retried, "no connection was killed mid-burst: the test did not test"
    keys = {f"engine-{e}-request-{n}" for e in range(ENGINES) for n in range(REQUESTS_PER_ENGINE)}
    assert set(results) == keys, "every registration got an answer"
    stored = ApprovalRequest.objects.filter(engine_key=world["engine_key"])
    assert stored.count() == len(keys), "no duplicate, no lost request"
    by_key = dict(stored.values_list("idempotency_key", "public_id"))
    assert set(by_key) == keys
    for key, answers in results.items():
        assert {answer["id"] for answer in answers} == {by_key[key]}, key
    # Each stored request is the one its engine asked for.
    assert {(r.idempotency_key, r.run_id) for r in stored} == {
        (f"engine-{e}-request-{n}", f"run_{e}_{n}") for e in range(ENGINES) for n in range(REQUESTS_PER_ENGINE)
    }


def test_it_answers_a_retried_key_with_the_first_request_after_its_connection_died(world, portal_server):
    """The classic lost response: the row committed, the answer never arrived; the retry must not duplicate."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {world['engine_token']}"
    headers = {"Idempotency-Key": "lost-answer"}
    first = session.post(f"{portal_server}/api/v1/approvals", json=body(world, 0, 0), headers=headers, timeout=30)
    assert first.status_code == 201, first.text
    with raw_connection() as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", [SERVER_APP_NAME]
        )
    retry = session.post(f"{portal_server}/api/v1/approvals", json=body(world, 0, 0), headers=headers, timeout=30)
    assert retry.status_code == 200, retry.text
    assert retry.json()["id"] == first.json()["id"]
    assert ApprovalRequest.objects.count() == 1
