"""A real upstream MCP server (the mcp SDK's MCPServer over stdio) whose tool asks its user before it acts.

Run as `python tests/adapters/upstream_asks.py LEDGER_PATH`. `schedule_refund` elicits (form mode) a
reason (a choice), an amount (an integer in a range), whether to tell the customer (yes/no) and an
optional note the newer way (a `Resolve(Elicit)` parameter); `schedule_refund_classic` asks the same
with the classic `await ctx.elicit()` inside the tool, which needs a session's back-channel. Each
writes to LEDGER_PATH what the elicitation answered — so a test sees exactly what
reached the server: `accept {…content…}`, `decline` or `cancel`.
"""

import json
import sys
from pathlib import Path
from typing import Annotated, Literal

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel, Field

LEDGER = Path(sys.argv[1]) if len(sys.argv) > 1 else None
server = MCPServer("asks")


class RefundDetails(BaseModel):
    reason: Literal["damaged", "late", "other"] = Field(description="Why is the ticket refunded?")
    amount_cents: int = Field(ge=1, le=10_000, description="How much, in cents?")
    notify: bool = Field(description="Tell the customer?")
    note: str | None = Field(default=None, description="Anything for the ledger?")


def _record(line: str) -> None:
    if LEDGER is not None:
        with LEDGER.open("a", encoding="utf-8") as ledger:
            ledger.write(line + "\n")


def ask_details(ticket_id: str) -> Elicit[RefundDetails]:
    return Elicit(f"Refund ticket {ticket_id}: how much, and why?", RefundDetails)


@server.tool()
def schedule_refund(ticket_id: str, details: Annotated[ElicitationResult[RefundDetails], Resolve(ask_details)]) -> str:
    """Schedule a refund, asking a person for its details first."""
    if details.action == "accept":
        _record("accept " + json.dumps(details.data.model_dump(), sort_keys=True))
        return f"Scheduled a refund of {details.data.amount_cents} cents on {ticket_id}."
    _record(details.action)
    return f"No refund scheduled on {ticket_id}: {details.action}."


@server.tool()
async def schedule_refund_classic(ticket_id: str, ctx: Context) -> str:
    """Schedule a refund, asking a person for its details from inside the tool."""
    details = await ctx.elicit(f"Refund ticket {ticket_id}: how much, and why?", RefundDetails)
    return schedule_refund(ticket_id, details)


if __name__ == "__main__":
    server.run("stdio")
