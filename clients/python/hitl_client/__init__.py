"""HITL Portal engine client: gate an agent's calls behind a person's approval.

    from hitl_client import GatedCall, HitlClient

    client = HitlClient("https://portal.example", engine_key)
    served = client.served("cfg_…")          # logs "HITL: ACTIVE — …" or "HITL: inert …"
    verdict = client.gate_call(served, GatedCall(
        kind="delete", target="customer T-4821", operation="delete",
        run_id=run_id, thread_id=thread_id, call_id=call_id, caller="support-bot",
        summary="Delete the customer record", arguments={"id": "T-4821"},
    ), execute=lambda: crm.delete("T-4821"))
    if not verdict.allowed:
        tell_the_agent(verdict.message)      # a person's reason, or "Nobody answered …"

`AsyncHitlClient` is the same API for asyncio. The core needs PyJWT (receipts.py: an approval's
signed receipt is checked before the call runs); the adapters
(`hitl_client.openai_agents`, `hitl_client.langgraph`, `hitl_client.mcp_gateway`) need their extra.
Contract: the portal's docs/api.md, "Engines".
"""

from ._async import AsyncHitlClient
from ._core import (
    ANY,
    INERT_NOTICE,
    LONG_POLL_SECONDS,
    DigestMismatch,
    GatedCall,
    HitlError,
    Verdict,
    call_digest,
    find_gate,
    idempotency_key,
    verdict_of,
)
from ._sync import HitlClient

__all__ = [
    "ANY",
    "INERT_NOTICE",
    "LONG_POLL_SECONDS",
    "AsyncHitlClient",
    "DigestMismatch",
    "GatedCall",
    "HitlClient",
    "HitlError",
    "Verdict",
    "call_digest",
    "find_gate",
    "idempotency_key",
    "verdict_of",
]
