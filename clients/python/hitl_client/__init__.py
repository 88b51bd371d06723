"""HITL Portal engine client: gate an agent's calls behind a person's approval.

    from hitl_client import GatedCall, HitlClient

    client = HitlClient("https://portal.example", engine_key)
    served = client.served("cfg_…")          # logs "HITL: ACTIVE — …" or "HITL: inert …"
    verdict = client.gate_call(served, GatedCall(
        kind="delete", target="customer T-4821", operation="delete",
        run_id=run_id, thread_id=thread_id, call_id=call_id, caller="support-bot",
        summary="Delete the customer record", arguments={"id": "T-4821"},
    ), execute=lambda arguments: crm.delete(arguments["id"]))   # what was approved: an edit, if any
    if not verdict.allowed:
        tell_the_agent(verdict.message)      # a person's reason, or "Nobody answered …"

    answers = client.ask(served, [{"id": "env", "prompt": "Deploy where?", "type": "choice",
                                   "options": [{"value": "staging"}, {"value": "prod"}]}],
                         run_id=run_id, thread_id=thread_id, call_id="ask-env", caller="support-bot")
    if answers.answered: env = answers["env"]       # else answers.state: declined · expired · …
    review = client.review_plan(served, plan_markdown, run_id=…, thread_id=…, call_id="plan-1", caller=…)
    if review.changes_requested: revise(review.feedback)

`AsyncHitlClient` is the same API for asyncio. The core needs PyJWT (receipts.py: an approval's
signed receipt is checked before the call runs); the adapters
(`hitl_client.openai_agents`, `hitl_client.langgraph`, `hitl_client.mcp_gateway`) need their extra.
Contract: the portal's docs/api.md, "Engines", "Questions and plans", "Approve with edits".
"""

from importlib import import_module

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs `hitl-hook` a good part of its start

# Each name is imported when first used: `hitl-hook` starts a process per tool call, and the asyncio
# client and the receipt check (PyJWT, cryptography) cost more to import than its whole answer may take.
_HOMES = {
    "AsyncHitlClient": "._async",
    "ANY": "._core",
    "INERT_NOTICE": "._core",
    "LONG_POLL_SECONDS": "._core",
    "DigestMismatch": "._core",
    "GatedCall": "._core",
    "HitlError": "._core",
    "Verdict": "._core",
    "call_digest": "._core",
    "find_gate": "._core",
    "idempotency_key": "._core",
    "verdict_of": "._core",
    "QUESTIONS_INERT_NOTICE": "._questions",
    "Answers": "._questions",
    "PlanReview": "._questions",
    "answers_of": "._questions",
    "review_of": "._questions",
    "HitlClient": "._sync",
}


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(home, __name__), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
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
    from ._questions import QUESTIONS_INERT_NOTICE, Answers, PlanReview, answers_of, review_of
    from ._sync import HitlClient

__all__ = [
    "ANY",
    "INERT_NOTICE",
    "LONG_POLL_SECONDS",
    "QUESTIONS_INERT_NOTICE",
    "Answers",
    "AsyncHitlClient",
    "DigestMismatch",
    "GatedCall",
    "HitlClient",
    "HitlError",
    "PlanReview",
    "Verdict",
    "answers_of",
    "call_digest",
    "find_gate",
    "idempotency_key",
    "review_of",
    "verdict_of",
]
