"""The engine adapters' cost: what each adds to a gated call beyond the HTTP it does, and the gateway's hop.

    BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/hitl_bench python -m bench.adapters [--calls 100]

Alone it recreates that database and starts gunicorn; `make bench` calls `measure_adapters` while its
own server runs. For each adapter, N gated calls are first registered (each adapter gives up waiting
at once, as an engine restarting would), approved in the database, then run again and measured: the
registration is an idempotent replay that answers "approved", so no person is in the loop and the
adapter does its whole flow — replay, digest check, resume, outcome report. Its overhead is the
call's wall time minus the time in HTTP exchanges (timed at the client's transport) and in the
framework's own work (graph steps; Runner.run and the SDK's RunState approval bookkeeping; the
upstream MCP call). The floor beside it is a raw
HTTP registration + poll of the same approved request (urllib, no client code).

The gateway's added latency on an ungated call: p50 of `tools/call` through the gateway (stdio) to
the upstream minus p50 of the same call straight to the upstream (stdio), in rotating blocks. Beside
it, two other hops over the same upstream: a raw relay (a process that copies lines between its stdio
and the upstream's, no MCP at all: the floor of any stdio hop on this machine) and a bare MCP proxy
(the SDK's server and client, forwarding only: what a gateway built the obvious way costs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import urllib.request
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
UPSTREAM = str(ROOT / "tests" / "adapters" / "upstream_billing.py")
TARGET_OVERHEAD_MS = 2.0
TARGET_GATEWAY_MS = 1.0


class Clock:
    """Time spent outside the adapter's own code during one call: HTTP and the framework."""

    def __init__(self) -> None:
        self.outside = 0.0

    @contextmanager
    def away(self):
        started = time.perf_counter()
        try:
            yield
        finally:
            self.outside += time.perf_counter() - started

    def time_client(self, client: Any) -> Any:
        original = client._call_once

        async def timed(*args: Any, **kwargs: Any) -> Any:
            with self.away():
                return await original(*args, **kwargs)

        client._call_once = timed
        return client


class _World:
    """A workspace of its own: an engine key, a reviewer, a config gating deletes and mcp_billing (level full)."""

    def __init__(self, base_url: str) -> None:
        from rules.services import config_create, config_publish, config_update, rule_create
        from workspaces.models import Workspace
        from workspaces.services import member_add, token_create, workspace_create

        slug = f"adapters-{int(time.time())}"
        Workspace.objects.filter(slug=slug).delete()
        self.workspace = workspace_create(slug=slug, plan="pro", name="Adapters bench")
        self.reviewer = member_add(
            workspace=self.workspace, email="reviewer@adapters.test", role="reviewer", password="bench-reviewer"
        ).user
        self.config = config_create(workspace=self.workspace, name="Adapters")
        config_update(config=self.config, pass_information_level="full")
        rule_create(config=self.config, message="Deletes need a second pair of eyes.")
        rule_create(config=self.config, kind="mcp_server", match="mcp_billing", message="Money moves.", order=20)
        config_publish(config=self.config, user=None, note="adapters bench")
        _, self.engine_key = token_create(workspace=self.workspace, engine_name="adapters-bench")
        self.base_url = base_url

    def approve_pending(self) -> int:
        from approvals.models import ApprovalRequest
        from approvals.review.decide import approval_decide

        pending = list(ApprovalRequest.objects.filter(workspace=self.workspace, status="pending"))
        for approval in pending:
            approval_decide(approval=approval, user=self.reviewer, decision="approve", reason="")
        return len(pending)

    def approved_ids(self) -> list[str]:
        from approvals.models import ApprovalRequest

        return list(
            ApprovalRequest.objects.filter(workspace=self.workspace, status="approved")
            .order_by("created_at")
            .values_list("public_id", flat=True)
        )


def _raw_floor(world: _World, approval_ids: list[str]) -> list[float]:
    """Raw HTTP: an idempotent registration replay + a poll of the same approved request, per call (ms)."""
    from approvals.models import ApprovalRequest

    samples = []
    for public_id in approval_ids:
        stored = ApprovalRequest.objects.get(public_id=public_id)
        body = {
            "kind": "gate",
            "config_id": world.config.public_id,
            "config_version": stored.config_version,
            "rule_id": stored.rule_id,
            "run_id": stored.run_id,
            "thread_id": stored.thread_id,
            "caller": stored.caller,
            "target": stored.target,
            "operation": stored.operation,
            "arguments": stored.arguments,
        }
        if stored.summary:
            body["summary"] = stored.summary
        headers = {
            "Authorization": f"Bearer {world.engine_key}",
            "Content-Type": "application/json",
            "Idempotency-Key": stored.idempotency_key,
        }
        started = time.perf_counter()
        request = urllib.request.Request(
            world.base_url + "/api/v1/approvals", data=json.dumps(body).encode(), headers=headers, method="POST"
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            registered = json.loads(answer.read())
        poll = urllib.request.Request(
            f"{world.base_url}/api/v1/approvals/{registered['id']}", headers={"Authorization": headers["Authorization"]}
        )
        with urllib.request.urlopen(poll, timeout=30) as answer:
            json.loads(answer.read())
        samples.append((time.perf_counter() - started) * 1000)
    return samples


# --- LangGraph ---------------------------------------------------------------------------------


def _langgraph(world: _World, calls: int) -> dict:
    from hitl_client import AsyncHitlClient
    from hitl_client.langgraph import HitlInbox
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt
    from typing_extensions import TypedDict

    class State(TypedDict, total=False):
        customer_id: str
        outcome: str

    def review(state: State) -> State:
        response = interrupt(
            {
                "action_request": {"action": "delete_customer", "args": {"customer_id": state["customer_id"]}},
                "config": {"allow_accept": True, "allow_respond": True, "allow_edit": False, "allow_ignore": False},
                "description": "Delete the customer",
            }
        )
        return {"outcome": response["type"]}

    builder = StateGraph(State)
    builder.add_node("review", review)
    builder.add_edge(START, "review")
    builder.add_edge("review", END)
    graph = builder.compile(checkpointer=InMemorySaver())

    class TimedGraph:
        def __init__(self, clock: Clock) -> None:
            self.clock = clock

        async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
            with self.clock.away():
                return await graph.ainvoke(*args, **kwargs)

        async def aget_state(self, *args: Any, **kwargs: Any) -> Any:
            with self.clock.away():
                return await graph.aget_state(*args, **kwargs)

    async def one(index: int, *, wait_timeout: float) -> tuple[float, float]:
        clock = Clock()
        client = clock.time_client(AsyncHitlClient(world.base_url, world.engine_key))
        inbox = HitlInbox(
            client,
            served,
            caller="bench",
            kinds={"delete_customer": "delete"},
            target=lambda action, args: f"customer {args['customer_id']}",
            wait_timeout=wait_timeout,
        )
        config = {"configurable": {"thread_id": f"lg-{index}"}}
        started = time.perf_counter()
        await inbox.arun(TimedGraph(clock), {"customer_id": f"C-{index}"}, config)
        total = time.perf_counter() - started
        return total * 1000, (total - clock.outside) * 1000

    async def run() -> list[tuple[float, float]]:
        nonlocal served
        served = await AsyncHitlClient(world.base_url, world.engine_key).served(world.config.public_id)
        for index in range(calls):
            await one(index, wait_timeout=0)  # registers, gives up at once: the graph stays paused
        world.approve_pending()
        return [await one(index, wait_timeout=5) for index in range(calls)]

    served: dict = {}
    return _summary(asyncio.run(run()))


# --- OpenAI Agents SDK -------------------------------------------------------------------------


def _openai_agents(world: _World, calls: int) -> dict:
    import hitl_client.openai_agents as adapter
    from agents import Agent, Runner, RunState, function_tool, set_tracing_disabled
    from agents.testing import ScriptedModel, assistant_message, function_call
    from hitl_client import AsyncHitlClient
    from hitl_client.openai_agents import HitlRunner

    set_tracing_disabled(True)

    @function_tool(needs_approval=True)
    def delete_customer(customer_id: str) -> str:
        """Delete a customer record."""
        return f"Deleted {customer_id}."

    def agent_for(index: int) -> Agent:
        model = ScriptedModel(
            [
                [function_call("delete_customer", {"customer_id": f"C-{index}"}, call_id=f"call_{index}")],
                [assistant_message("Done.")],
            ]
        )
        return Agent(name="bench-agent", model=model, tools=[delete_customer])

    class TimedRunner:
        clock: Clock

        @classmethod
        async def run(cls, *args: Any, **kwargs: Any) -> Any:
            with cls.clock.away():
                return await Runner.run(*args, **kwargs)

    async def run() -> list[tuple[float, float]]:
        served = await AsyncHitlClient(world.base_url, world.engine_key).served(world.config.public_id)
        paused = []
        for index in range(calls):
            gates = HitlRunner(AsyncHitlClient(world.base_url, world.engine_key), served, caller="bench",
                               kinds={"delete_customer": "delete"}, wait_timeout=0,
                               target=lambda tool, args: f"customer {args['customer_id']}")  # fmt: skip
            agent = agent_for(index)
            paused.append((agent, (await gates.run(agent, "Delete", run_id="bench-run")).to_state()))
        world.approve_pending()
        samples = []
        adapter.Runner = TimedRunner  # type: ignore[misc]
        # The SDK's own approval bookkeeping (any engine on its HITL flow pays it) counts as framework time.
        originals = {name: getattr(RunState, name) for name in ("get_interruptions", "approve", "reject")}
        for name, method in originals.items():
            setattr(RunState, name, _timed_method(method, lambda: TimedRunner.clock))
        try:
            for agent, state in paused:
                clock = Clock()
                TimedRunner.clock = clock
                client = clock.time_client(AsyncHitlClient(world.base_url, world.engine_key))
                gates = HitlRunner(client, served, caller="bench", kinds={"delete_customer": "delete"},
                                   target=lambda tool, args: f"customer {args['customer_id']}",
                                   wait_timeout=5)  # fmt: skip
                started = time.perf_counter()
                await gates.run(agent, state, run_id="bench-run")
                total = time.perf_counter() - started
                samples.append((total * 1000, (total - clock.outside) * 1000))
        finally:
            adapter.Runner = Runner  # type: ignore[misc]
            for name, method in originals.items():
                setattr(RunState, name, method)
        return samples

    return _summary(asyncio.run(run()))


# --- MCP gateway -------------------------------------------------------------------------------


def _gateway_config(world: _World, ledger: Path, wait_timeout: float | None) -> Any:
    from hitl_client.mcp_gateway import GatewayConfig, Upstream

    return GatewayConfig(
        portal_url=world.base_url,
        engine_key=world.engine_key,
        config_id=world.config.public_id,
        upstreams=[
            Upstream("mcp_billing", sys.executable, [UPSTREAM, str(ledger), "billing"]),
            Upstream("mcp_tickets", sys.executable, [UPSTREAM, str(ledger), "tickets"]),
        ],
        wait_timeout=wait_timeout,
    )


def _gateway_gated(world: _World, calls: int, workdir: Path) -> dict:
    import mcp_types as types
    from hitl_client.mcp_gateway import Gateway

    async def run() -> tuple[list[tuple[float, float]], list[float]]:
        gateway = Gateway(_gateway_config(world, workdir / "ledger", wait_timeout=0))
        async with AsyncExitStack() as stack:
            await gateway.connect(stack)
            requests = [
                types.CallToolRequestParams(name="issue_refund", arguments={"ticket_id": f"T-{i}", "amount_cents": i})
                for i in range(calls)
            ]
            for params in requests:
                await gateway._call_tool(None, params)  # registers; gives up at once
            world.approve_pending()
            gateway.config.wait_timeout = 5
            samples = []
            upstream = gateway.upstreams["mcp_billing"]
            for params in requests:
                clock = Clock()
                clock.time_client(gateway.client)

                gateway.upstreams["mcp_billing"] = _TimedUpstream(upstream, clock)  # type: ignore[assignment]
                started = time.perf_counter()
                result = await gateway._call_tool(None, params)
                total = time.perf_counter() - started
                assert not result.is_error, result
                samples.append((total * 1000, (total - clock.outside) * 1000))
                del gateway.client._call_once  # unwrap: the next call gets a clock of its own
            ungated = []
            tickets = gateway.upstreams["mcp_tickets"]
            lookup = types.CallToolRequestParams(name="lookup_ticket", arguments={"ticket_id": "T-1"})
            for _ in range(calls):  # the gateway's own work on an ungated call, without any transport
                clock = Clock()
                gateway.upstreams["mcp_tickets"] = _TimedUpstream(tickets, clock)  # type: ignore[assignment]
                started = time.perf_counter()
                await gateway._call_tool(None, lookup)
                ungated.append((time.perf_counter() - started - clock.outside) * 1000)
            return samples, ungated

    samples, ungated = asyncio.run(run())
    return {**_summary(samples), "ungated_own_p50_ms": statistics.median(ungated)}


def _timed_method(method: Any, clock_of: Any) -> Any:
    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        with clock_of().away():
            return method(self, *args, **kwargs)

    return timed


class _TimedUpstream:
    def __init__(self, upstream: Any, clock: Clock) -> None:
        self.upstream, self.clock = upstream, clock

    async def call_tool(self, *args: Any, **kwargs: Any) -> Any:
        with self.clock.away():
            return await self.upstream.call_tool(*args, **kwargs)


def _gateway_ungated(world: _World, calls: int, workdir: Path) -> dict:
    """p50 of an ungated tools/call through the gateway (stdio) minus straight to the upstream (stdio)."""
    from mcp import Client, StdioServerParameters

    toml = workdir / "gateway.toml"
    ledger = workdir / "ledger2"
    toml.write_text(
        f'[portal]\nurl = "{world.base_url}"\nconfig = "{world.config.public_id}"\n'
        f'[servers.mcp_tickets]\ncommand = "{sys.executable}"\nargs = ["{UPSTREAM}", "{ledger}", "tickets"]\n'
    )
    gateway = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hitl_client.mcp_gateway", "--config", str(toml)],
        env={**os.environ, "HITL_ENGINE_KEY": world.engine_key},
    )
    upstream_args = [UPSTREAM, str(ledger), "tickets"]
    paths = {
        "gateway": gateway,
        "bare_proxy": StdioServerParameters(
            command=sys.executable, args=["-m", "bench.adapters", "--bare-proxy", "--", *upstream_args]
        ),
        "raw_relay": StdioServerParameters(
            command=sys.executable, args=["-m", "bench.adapters", "--raw-relay", "--", *upstream_args]
        ),
        "direct": StdioServerParameters(command=sys.executable, args=upstream_args),
    }

    async def run() -> dict[str, list[float]]:
        samples: dict[str, list[float]] = {name: [] for name in paths}
        async with AsyncExitStack() as stack:
            clients = {name: await stack.enter_async_context(Client(params)) for name, params in paths.items()}
            for client in clients.values():  # warm every path
                for _ in range(10):
                    await client.call_tool("lookup_ticket", {"ticket_id": "T-1"})
            block = 10
            for start in range(0, calls, block):
                order = list(clients.items())
                shift = (start // block) % len(order)
                for name, client in order[shift:] + order[:shift]:  # rotate, so no path always goes first
                    for _ in range(block):
                        started = time.perf_counter()
                        await client.call_tool("lookup_ticket", {"ticket_id": "T-1"})
                        samples[name].append((time.perf_counter() - started) * 1000)
        return samples

    samples = asyncio.run(run())
    p50 = {name: statistics.median(values) for name, values in samples.items()}
    return {
        "gateway_p50_ms": p50["gateway"],
        "bare_proxy_p50_ms": p50["bare_proxy"],
        "raw_relay_p50_ms": p50["raw_relay"],
        "direct_p50_ms": p50["direct"],
        "added_p50_ms": p50["gateway"] - p50["direct"],
        "raw_relay_added_p50_ms": p50["raw_relay"] - p50["direct"],
        "added_over_raw_relay_p50_ms": p50["gateway"] - p50["raw_relay"],
        "added_over_bare_proxy_p50_ms": p50["gateway"] - p50["bare_proxy"],
    }


def _bare_proxy(upstream_args: list[str]) -> None:
    """The transport's floor for a gateway: an MCP server over stdio that forwards to one upstream, nothing else."""
    import mcp_types as types
    from mcp import Client, StdioServerParameters
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        async with Client(StdioServerParameters(command=sys.executable, args=upstream_args)) as upstream:
            tools = (await upstream.list_tools()).tools

            async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
                return types.ListToolsResult(tools=tools)

            async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
                return await upstream.call_tool(params.name, params.arguments or {})

            server: Server[Any] = Server("bare-proxy", on_list_tools=list_tools, on_call_tool=call_tool)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

    asyncio.run(run())


def _raw_relay(upstream_args: list[str]) -> None:
    """The floor of any stdio hop: copy lines between our stdio and one upstream's, parsing nothing.

    One blocking thread per direction: each wakes straight from its read, so a line crosses this
    process with no event loop and no hand-off between threads."""
    import subprocess
    import threading

    upstream = subprocess.Popen([sys.executable, *upstream_args], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def answers() -> None:
        for line in upstream.stdout:  # type: ignore[union-attr]
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    threading.Thread(target=answers, daemon=True).start()
    for line in sys.stdin.buffer:
        upstream.stdin.write(line)  # type: ignore[union-attr]
        upstream.stdin.flush()  # type: ignore[union-attr]
    upstream.stdin.close()  # type: ignore[union-attr]
    upstream.wait()


def _summary(samples: list[tuple[float, float]]) -> dict:
    totals, overheads = [s[0] for s in samples], [s[1] for s in samples]
    return {
        "calls": len(samples),
        "total_p50_ms": statistics.median(totals),
        "overhead_p50_ms": statistics.median(overheads),
        "overhead_p95_ms": statistics.quantiles(overheads, n=20)[-1] if len(overheads) > 1 else overheads[0],
    }


def measure_adapters(*, base_url: str, calls: int = 100) -> dict:
    """Each adapter's overhead per gated call, the raw HTTP floor, and the gateway's ungated hop (Django set up)."""
    # The bench drives asyncio adapters and reads/decides through the ORM in between, one thing at a time.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    world = _World(base_url)
    results: dict = {"calls": calls}
    with tempfile.TemporaryDirectory() as workdir:
        results["langgraph"] = _langgraph(world, calls)
        results["openai_agents"] = _openai_agents(world, calls)
        results["mcp_gateway_gated"] = _gateway_gated(world, calls, Path(workdir))
        results["floor"] = {"raw_http_p50_ms": statistics.median(_raw_floor(world, world.approved_ids()[:calls]))}
        results["mcp_gateway_ungated"] = _gateway_ungated(world, max(calls * 4, 400), Path(workdir))
    return results


def run(bench: Any) -> list[dict]:
    """The section `make bench` runs while its server is up."""
    from bench.harness import log
    from bench.server import PORT

    log("engine adapters: overhead per gated call, and the MCP gateway's hop (bench/adapters.py)")
    calls = 30 if bench.args.quick else 100
    bench.results["adapters"] = measure_adapters(base_url=f"http://127.0.0.1:{PORT}", calls=calls)
    return adapter_rows(bench.results["adapters"])


def adapter_rows(results: dict) -> list[dict]:
    """Rows for bench's table: overhead beside the raw registration + poll it rides on."""
    floor = results["floor"]["raw_http_p50_ms"]
    rows = []
    for key, label in (
        ("langgraph", "LangGraph adapter overhead per gated call (p50)"),
        ("openai_agents", "Agents SDK adapter overhead per gated call (p50)"),
        ("mcp_gateway_gated", "MCP gateway overhead per gated call (p50)"),
    ):
        value = results[key]["overhead_p50_ms"]
        rows.append(_row(label, value, floor, f"≤ {TARGET_OVERHEAD_MS:g} ms", value <= TARGET_OVERHEAD_MS))
    ungated = results["mcp_gateway_ungated"]
    rows.append(
        _row(
            "MCP gateway added latency, ungated call, over calling the upstream directly (p50, stdio)",
            ungated["added_p50_ms"],
            ungated["direct_p50_ms"],
            f"≤ {TARGET_GATEWAY_MS:g} ms",
            ungated["added_p50_ms"] <= TARGET_GATEWAY_MS,
        )
    )
    rows.append(
        _row(
            "a raw relay's added latency, no MCP (p50, stdio): the floor of any stdio hop here",
            ungated["raw_relay_added_p50_ms"],
            ungated["direct_p50_ms"],
            "—",
            None,
        )
    )
    own = results["mcp_gateway_gated"]["ungated_own_p50_ms"]
    rows.append(
        _row(
            "MCP gateway's own work on an ungated call, in-process (p50)",
            own,
            ungated["direct_p50_ms"],
            f"≤ {TARGET_GATEWAY_MS:g} ms",
            own <= TARGET_GATEWAY_MS,
        )
    )
    rows.append(
        _row(
            "MCP gateway added latency, ungated call, over a bare MCP proxy (p50, stdio)",
            ungated["added_over_bare_proxy_p50_ms"],
            ungated["bare_proxy_p50_ms"],
            f"≤ {TARGET_GATEWAY_MS:g} ms",
            ungated["added_over_bare_proxy_p50_ms"] <= TARGET_GATEWAY_MS,
        )
    )
    return rows


def _row(figure: str, value: float, floor: float, target: str, met: bool | None) -> dict:
    from bench.report import row

    return row(figure, value, floor, " ms", value / floor if floor else None, target, met)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=100, help="gated calls per adapter (default 100)")
    parser.add_argument("--bare-proxy", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--raw-relay", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("upstream", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare_proxy:
        return _bare_proxy(args.upstream)
    if args.raw_relay:
        return _raw_relay(args.upstream)
    from bench.harness import RESULTS, recreate_database, setup_django
    from bench.report import table
    from bench.server import PORT, Server

    url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/hitl_bench")
    RESULTS.mkdir(parents=True, exist_ok=True)
    recreate_database(url)
    setup_django(url)
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    connection.close()
    server = Server(url)
    try:
        results = measure_adapters(base_url=f"http://127.0.0.1:{PORT}", calls=args.calls)
    finally:
        server.stop()
    (RESULTS / "adapters.json").write_text(json.dumps(results, indent=2))
    print(table(adapter_rows(results)))


if __name__ == "__main__":
    main()
