"""An independent reading of API.md's chain rule, written from the contract and not from audit/chain.py."""

import hashlib
import json

ZEROS = "0" * 64


def independent_hash(record: dict) -> str:
    body = {key: value for key, value in record.items() if key != "hash"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(prev_bytes(record) + text.encode("utf-8")).hexdigest()


def prev_bytes(record: dict) -> bytes:
    return record["prev_hash"].encode("utf-8")


def assert_chain(records: list[dict]) -> None:
    """seq 1..N without gaps, each prev_hash the hash before, each hash recomputed."""
    assert [record["seq"] for record in records] == list(range(1, len(records) + 1))
    previous = ZEROS
    for record in records:
        assert record["prev_hash"] == previous, record
        assert independent_hash(record) == record["hash"], record
        previous = record["hash"]


def export(client, token: str, query: str = "") -> list[dict]:
    response = client.get(f"/api/v1/audit{query}", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    body = b"".join(response.streaming_content).decode("utf-8")
    return [json.loads(line) for line in body.splitlines()]
