"""A real upstream MCP server (the mcp SDK's MCPServer over stdio): billing tools that write to a ledger file.

Run as `python tests/adapters/upstream_billing.py LEDGER_PATH [billing|tickets|both] [PORT]`; each tool
call that reaches it appends a line to LEDGER_PATH, so a test sees exactly which calls the gateway (or
the agent) let through. `billing` offers only issue_refund (`billing-kills-gateway` too, and kills its
parent — the gateway — right after a refund, as a crash between running a call and reporting it would),
`tickets` lookup_ticket and three tools that
show what a relay must pass on (progress, a call cancelled mid-way, a server that dies mid-call). With a
PORT it serves streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio.
"""

import os
import signal
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer

LEDGER = Path(sys.argv[1]) if len(sys.argv) > 1 else None
OFFERS = sys.argv[2] if len(sys.argv) > 2 else "both"
server = MCPServer("billing")


def _record(line: str) -> None:
    if LEDGER is not None:
        with LEDGER.open("a", encoding="utf-8") as ledger:
            ledger.write(line + "\n")


def issue_refund(ticket_id: str, amount_cents: int) -> str:
    """Refund a ticket's charge."""
    _record(f"issue_refund {ticket_id} {amount_cents}")
    if OFFERS == "billing-kills-gateway":
        os.kill(os.getppid(), signal.SIGKILL)
    return f"Refunded {amount_cents} cents on {ticket_id}."


def lookup_ticket(ticket_id: str) -> str:
    """Read a ticket."""
    _record(f"lookup_ticket {ticket_id}")
    return f"Ticket {ticket_id}: customer asks for a refund of 49.00 USD."


async def export_tickets(count: int, ctx: Context) -> str:
    """Export tickets, reporting progress after each one."""
    for done in range(1, count + 1):
        await ctx.report_progress(done, count, f"ticket {done} of {count}")
    _record(f"export_tickets {count}")
    return f"Exported {count} tickets."


async def wait_for_agent(seconds: float) -> str:
    """Wait for a human agent to pick the ticket up (a long call, to cancel)."""
    _record("wait_for_agent started")
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        _record("wait_for_agent cancelled")
        raise
    return "An agent picked it up."


def crash() -> str:
    """Die mid-call, as a server with a bug does."""
    _record("crash")
    os._exit(3)


if OFFERS in ("billing", "billing-kills-gateway", "both"):
    server.tool()(issue_refund)
if OFFERS in ("tickets", "both"):
    server.tool()(lookup_ticket)
if OFFERS == "tickets":
    for tool in (export_tickets, wait_for_agent, crash):
        server.tool()(tool)

if __name__ == "__main__":
    if len(sys.argv) > 3:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[3]))
    else:
        server.run("stdio")
