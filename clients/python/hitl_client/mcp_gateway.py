"""`hitl-mcp-gateway --config gateway.toml` (`pip install "hitl-client[mcp]"`): MCP approvals with no code.

An MCP server (stdio, or streamable HTTP with `--http`) that fronts upstream MCP servers, each under
its `mcp_…` id. It lists their tools unchanged. A call to a server that a served rule gates becomes a
portal request (target = the server id, operation = the tool, arguments as the config's level
allows); the gateway waits for the person, then forwards the call — and reports the outcome after
the upstream answers — or returns a tool error carrying the reviewer's reason ("Nobody answered …"
when the request expired). Inert configs forward at once, with the notice in the log.

    [portal]
    url = "http://127.0.0.1:8000"
    config = "cfg_…"
    engine_key_env = "HITL_ENGINE_KEY"     # the key is read from this variable, never from the file

    [gateway]
    caller = "mcp-gateway"                 # run_id, wait_timeout_seconds, served_ttl_seconds optional

    [servers.mcp_billing]
    command = "python"
    args = ["billing_server.py"]

    [servers.mcp_docs]
    url = "http://127.0.0.1:9000/mcp"

The idempotency key of a call is (run id, server id, config version + call digest + occurrence): a
client that calls again after a gateway restart waits on the same request; an identical call made
after the first one ran, was rejected or expired asks anew.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import re
import sys
import time
import tomllib
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import mcp_types as types
    from mcp import Client, StdioServerParameters
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
except ImportError as missing:  # the core has no dependencies; each adapter needs its extra
    raise ImportError(f'{missing} — install the extra: pip install "hitl-client[mcp]"') from missing

from . import _core
from ._async import AsyncHitlClient
from ._core import GatedCall, HitlError, Verdict

logger = logging.getLogger("hitl_client.mcp_gateway")
SERVER_ID = re.compile(r"^mcp_[A-Za-z0-9_.-]{1,120}$")


class GatewayConfigError(ValueError):
    """gateway.toml says something the gateway cannot run; the message says what to fix."""


@dataclass
class Upstream:
    server_id: str
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    url: str | None = None

    def target(self) -> StdioServerParameters | str:
        if self.url:
            return self.url
        return StdioServerParameters(command=self.command or "", args=self.args, env=self.env)


@dataclass
class GatewayConfig:
    portal_url: str
    engine_key: str
    config_id: str
    upstreams: list[Upstream]
    caller: str = "mcp-gateway"
    run_id: str = "mcp-gateway"
    wait_timeout: float | None = None
    served_ttl: float = 10.0

    @classmethod
    def load(cls, path: str | Path, environ: dict[str, str] | None = None) -> GatewayConfig:
        environ = dict(os.environ if environ is None else environ)
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise GatewayConfigError(f"{path}: {error}") from None
        portal, gateway, servers = data.get("portal", {}), data.get("gateway", {}), data.get("servers", {})
        for key in ("url", "config"):
            if not isinstance(portal.get(key), str) or not portal[key]:
                raise GatewayConfigError(f'{path}: [portal] needs {key} = "…"')
        key_env = portal.get("engine_key_env", "HITL_ENGINE_KEY")
        if not environ.get(key_env):
            raise GatewayConfigError(f"{key_env} is not set: export the engine key (hitl token create --engine …)")
        if not servers:
            raise GatewayConfigError(f"{path}: add at least one [servers.mcp_…] table")
        upstreams = []
        for server_id, spec in servers.items():
            if not SERVER_ID.match(server_id):
                raise GatewayConfigError(f"{path}: [servers.{server_id}]: a server id starts with mcp_ (mcp_billing)")
            if bool(spec.get("command")) == bool(spec.get("url")):
                raise GatewayConfigError(f"{path}: [servers.{server_id}] needs either command = … or url = …")
            upstreams.append(
                Upstream(server_id, spec.get("command"), list(spec.get("args", [])), spec.get("env"), spec.get("url"))
            )
        wait_timeout = gateway.get("wait_timeout_seconds")
        return cls(
            portal_url=portal["url"],
            engine_key=environ[key_env],
            config_id=portal["config"],
            upstreams=upstreams,
            caller=gateway.get("caller", "mcp-gateway"),
            run_id=gateway.get("run_id", "mcp-gateway"),
            wait_timeout=None if wait_timeout is None else float(wait_timeout),
            served_ttl=float(gateway.get("served_ttl_seconds", 10.0)),
        )


class Gateway:
    """The MCP server in front of the upstreams; `serve_stdio` or `serve_http` runs it."""

    def __init__(self, config: GatewayConfig, *, client: AsyncHitlClient | None = None):
        self.config = config
        self.client = client or AsyncHitlClient(config.portal_url, config.engine_key, log=logger)
        self.upstreams: dict[str, Client] = {}
        self.tools: list[types.Tool] = []
        self.server_of: dict[str, str] = {}  # tool name → server id
        self._served: dict | None = None
        self._served_at = 0.0
        self._occurrence: dict[str, int] = {}  # where to start counting identical calls (a hint; the portal decides)
        self.server: Server[Any] = Server(
            "hitl-mcp-gateway", on_list_tools=self._list_tools, on_call_tool=self._call_tool
        )

    # --- lifecycle ---------------------------------------------------------------------------

    async def connect(self, stack: AsyncExitStack) -> None:
        """Open every upstream and read its tools; a tool name two servers share is refused up front."""
        for upstream in self.config.upstreams:
            client = await stack.enter_async_context(Client(upstream.target()))
            self.upstreams[upstream.server_id] = client
            cursor = None
            while True:
                page = await client.list_tools(cursor=cursor)
                for tool in page.tools:
                    if tool.name in self.server_of:
                        raise GatewayConfigError(
                            f"Tool {tool.name} is offered by both {self.server_of[tool.name]} and "
                            f"{upstream.server_id}: MCP clients see tools by name, so front them with two gateways."
                        )
                    self.server_of[tool.name] = upstream.server_id
                    self.tools.append(tool)
                cursor = page.next_cursor
                if not cursor:
                    break
            logger.info("HITL gateway: %s offers %d tools", upstream.server_id, len(self.tools))
        await self.served(fresh=True)

    async def served(self, *, fresh: bool = False) -> dict:
        """The served gate table, re-read every `served_ttl` seconds so a publish or pin takes effect."""
        if fresh or self._served is None or time.monotonic() - self._served_at > self.config.served_ttl:
            try:
                # With a table in hand, a refresh does not sit out the portal's outage: one try.
                retry = None if self._served is None else 0.0
                self._served = await self.client.served(self.config.config_id, retry_for=retry)
            except HitlError as error:
                if self._served is None or not error.retryable:
                    raise
                # An unreachable portal must not stop ungated calls; gated ones still fail closed at registration.
                logger.warning("HITL: could not refresh the gate table (%s); keeping version %s", error,
                               self._served["version"])  # fmt: skip
            self._served_at = time.monotonic()
        return self._served

    async def serve_stdio(self) -> None:
        async with AsyncExitStack() as stack:
            await self.connect(stack)
            pipes = await _asyncio_stdio()
            async with stdio_server(*pipes) as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())

    async def serve_http(self, host: str, port: int) -> None:
        import uvicorn

        async with AsyncExitStack() as stack:
            await self.connect(stack)
            app = self.server.streamable_http_app(host=host)
            server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))
            await server.serve()

    # --- MCP handlers ------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        server_id = self.server_of.get(params.name)
        if server_id is None:
            return _tool_error(f"Unknown tool {params.name!r}: this gateway offers {', '.join(self.server_of)}.")
        arguments = params.arguments or {}
        try:
            verdict = await self.decide(server_id, params.name, arguments)
        except HitlError as error:  # fail closed: no answer from the portal is not an approval
            logger.warning("HITL: %s — %s.%s was not run", error, server_id, params.name)
            return _tool_error(f"The approval portal could not be asked, so the call was not run: {error}")
        if not verdict.allowed:
            return _tool_error(verdict.message)
        try:
            result = await self.upstreams[server_id].call_tool(params.name, arguments)
        except Exception as error:  # the upstream died or refused: the approved call did not run
            result = _tool_error(f"{server_id} could not run {params.name}: {error}")
        if verdict.state == "approved":
            if result.is_error:
                verdict.error = RuntimeError(_text_of(result) or "the upstream tool reported an error")
            try:
                await self.client.report(verdict)
            except HitlError as error:  # the call ran; losing its outcome must not lose its result
                logger.warning("HITL: could not report the outcome of %s: %s", verdict.approval["id"], error)
        return result

    async def decide(self, server_id: str, tool: str, arguments: dict) -> Verdict:
        """Ask the portal about one call (unless no rule gates the server) and wait for the answer."""
        served = await self.served()
        call = self._call(served, server_id, tool, arguments, occurrence=0)
        verdict = _core.not_asked(served, call)
        if verdict is not None:
            if verdict.state == "inert":
                logger.info("%s — forwarding %s.%s", verdict.message, server_id, tool)
            return verdict
        gate = _core.find_gate(served, kind="mcp_server", target=server_id)
        assert gate is not None
        base = f"{served['version']}:{_core.call_digest(target=server_id, operation=tool, arguments=arguments)}"
        occurrence = self._occurrence.get(base, 0)
        while True:
            call = self._call(served, server_id, tool, arguments, occurrence=occurrence, base=base)
            approval = await self.client.request_approval(served, gate, call)
            if approval.get("status") == "inert":
                logger.info("%s — forwarding %s.%s", approval["notice"], server_id, tool)
                return Verdict(True, "inert", approval["notice"])
            if approval["status"] == "pending" or (approval["status"] == "approved" and not approval.get("execution")):
                break  # this call's own request (a restart finds it again)
            occurrence += 1  # an identical earlier call ran, was rejected or expired: ask anew
        self._occurrence[base] = occurrence  # the next identical call starts here, finds it used, and moves on
        if approval["status"] == "pending":
            logger.info("HITL: %s.%s waits for a person (%s)", server_id, tool, approval["id"])
            approval = await self.client.wait(approval["id"], self.config.wait_timeout)
        verdict = _core.verdict_of(approval)
        if verdict.allowed and not _core.digest_matches(served, approval, call):
            return _core.digest_mismatch(approval)
        return verdict

    def _call(
        self, served: dict, server_id: str, tool: str, arguments: dict, *, occurrence: int, base: str = ""
    ) -> GatedCall:
        return GatedCall(
            kind="mcp_server",
            target=server_id,
            operation=tool,
            run_id=self.config.run_id,
            thread_id=server_id,
            call_id=f"{base}#{occurrence}",
            caller=self.config.caller,
            summary=f"{tool} on {server_id}",
            arguments=arguments,
        )


class _LinesIn:
    """stdin as the async line iterator stdio_server reads, on the event loop (no worker thread per line)."""

    def __init__(self, reader: asyncio.StreamReader):
        self.reader = reader

    def __aiter__(self) -> _LinesIn:
        return self

    async def __anext__(self) -> str:
        line = await self.reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class _LinesOut:
    """stdout as the async file stdio_server writes, on the event loop."""

    def __init__(self, writer: asyncio.StreamWriter):
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


async def _asyncio_stdio() -> tuple[Any, Any] | tuple[()]:
    """Event-loop pipes for stdin/stdout when both are pipes (as an MCP client launches us): each message
    then skips the two thread hand-offs of the SDK's default file wrappers — the gateway's hop is that
    much shorter. Anything else (a terminal, a file) gets the SDK's own stdio handling."""
    import stat

    if not all(stat.S_ISFIFO(os.fstat(fd).st_mode) for fd in (0, 1)):
        return ()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", closefd=False))
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(1, "wb", closefd=False)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return _LinesIn(reader), _LinesOut(writer)


def _tool_error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _text_of(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))[:2000]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="hitl-mcp-gateway", description="An MCP server that asks the HITL Portal before gated calls."
    )
    parser.add_argument("--config", required=True, help="gateway.toml: the portal, the config id, the upstreams")
    parser.add_argument("--http", action="store_true", help="serve streamable HTTP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    options = parser.parse_args(argv)
    # stdout carries the MCP protocol over stdio: everything else goes to stderr.
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    try:
        gateway = Gateway(GatewayConfig.load(options.config))
        asyncio.run(gateway.serve_http(options.host, options.port) if options.http else gateway.serve_stdio())
    except (GatewayConfigError, HitlError) as error:
        print(f"hitl-mcp-gateway: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
