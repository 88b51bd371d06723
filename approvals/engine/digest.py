import hashlib
import json


def call_digest(*, target: str, operation: str, arguments: object) -> str:
    """docs/api.md's call_digest: what the engine checks before running an approved call."""
    canonical = json.dumps(
        {"target": target, "operation": operation, "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()
