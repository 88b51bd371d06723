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
    http_token_env = "HITL_GATEWAY_TOKEN"  # --http: every MCP client sends `Authorization: Bearer <it>`

    [servers.mcp_billing]
    command = "python"
    args = ["billing_server.py"]

    [servers.mcp_docs]
    url = "http://127.0.0.1:9000/mcp"

Over stdio, a call to a stdio upstream that no rule gates is relayed as a JSON-RPC line (see `_Relay`):
the client's `tools/call` goes to the upstream's stdin under an id of the gateway's, and the answer (and
any progress) comes back to the client as the upstream wrote it — no MCP session on the way, which was
most of what the extra hop cost. Everything else (gated calls, listing, HTTP) goes through the SDK.

The idempotency key of a call is (run id, server id, config version + call digest + occurrence): a
client that calls again after a gateway restart waits on the same request; an identical call made
after the first one ran, was rejected or expired asks anew.

Approved with edits: the gateway forwards the arguments the reviewer approved (`decision.arguments`),
reports their digest with the outcome, and adds a line to the result saying the call ran as edited.

Elicitation: an upstream's `elicitation/create` (form mode) becomes a portal question — one question per
field (see `hitl_client.elicitation`) — and the answer goes back as the elicitation's result: `accept`
with the content, `decline` when a person declined, `cancel` when nobody answered before the deadline.
Toward an MCP client that declared URL-mode elicitation, a gated call that waits for a person points the
client at the request's page (an `InputRequiredResult` carrying a URL elicitation on the 2026 protocol,
an `elicitation/create` in URL mode before it), so the person can decide right there; the call goes on
waiting either way, and on the older protocol the client is told when the elicitation is complete.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import json
import logging
import os
import re
import signal
import sys
import time
import tomllib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    import anyio
    import mcp_types as types
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import get_default_environment
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError
    from mcp.shared.message import SessionMessage
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
except ImportError as missing:  # the core has no dependencies; each adapter needs its extra
    raise ImportError(f'{missing} — install the extra: pip install "hitl-client[mcp]"') from missing

from . import _core, _questions, elicitation
from ._async import AsyncHitlClient
from ._core import GatedCall, HitlError, Verdict

logger = logging.getLogger("hitl_client.mcp_gateway")
# What an upstream answers when its tool asks the classic way (`await ctx.elicit()` inside the tool) over the
# 2026 protocol, whose requests carry no back-channel for a server's own requests (mcp.shared.exceptions).
NO_BACK_CHANNEL = "no back-channel"
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
    http_token: str | None = None  # what an MCP client must send over HTTP (Bearer); None: HTTP is refused
    http_token_env: str = "HITL_GATEWAY_TOKEN"

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
        token_env = gateway.get("http_token_env", "HITL_GATEWAY_TOKEN")
        return cls(
            portal_url=portal["url"],
            engine_key=environ[key_env],
            config_id=portal["config"],
            upstreams=upstreams,
            caller=gateway.get("caller", "mcp-gateway"),
            run_id=gateway.get("run_id", "mcp-gateway"),
            wait_timeout=None if wait_timeout is None else float(wait_timeout),
            served_ttl=float(gateway.get("served_ttl_seconds", 10.0)),
            http_token=environ.get(token_env) or None,
            http_token_env=token_env,
        )


class BearerRequired:
    """ASGI: every HTTP request carries `Authorization: Bearer <token>`, else 401 before the MCP app sees it."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self.expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # the lifespan: nothing a caller sends
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(given, self.expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps(
            {"error": "unauthorized", "message": "Send Authorization: Bearer <the gateway's token>."}
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"www-authenticate", b'Bearer realm="hitl-mcp-gateway"'),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": body})


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
        self._asked: dict[str, int] = {}  # the same for identical elicitations
        self._stack: AsyncExitStack | None = None  # where the upstreams' connections live
        self.with_session: set[str] = set()  # upstreams reconnected over a session for their classic elicitations
        self.server: Server[Any] = Server(
            "hitl-mcp-gateway", on_list_tools=self._list_tools, on_call_tool=self._call_tool
        )
        self.relay = _Relay(self)

    # --- lifecycle ---------------------------------------------------------------------------

    async def connect(self, stack: AsyncExitStack) -> None:
        """Open every upstream and read its tools; a tool name two servers share is refused up front."""
        self._stack = stack
        for upstream in self.config.upstreams:
            target = upstream.target()
            if isinstance(target, StdioServerParameters):  # its ungated calls can skip the SDK (see _Relay)
                target = self.relay.transport(upstream.server_id, target)
            client = await stack.enter_async_context(
                Client(target, elicitation_callback=self._elicitation_callback(upstream.server_id))
            )
            self.upstreams[upstream.server_id] = client
            if upstream.server_id in self.relay.pipes:
                self.relay.versions[upstream.server_id] = client.protocol_version
            cursor, offered = None, 0
            while True:
                page = await client.list_tools(cursor=cursor)
                offered += len(page.tools)
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
            logger.info("HITL gateway: %s offers %d tools", upstream.server_id, offered)
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
            pipes = await _asyncio_stdio(self.relay)
            async with stdio_server(*pipes) as (read, write):
                await self.server.run(read, write, self.server.create_initialization_options())

    async def serve_http(self, host: str, port: int) -> None:
        import uvicorn

        token = self.config.http_token
        if not token:
            # Anyone who reaches the port could otherwise call every tool as this engine key.
            raise GatewayConfigError(
                f"{self.config.http_token_env} is not set: over HTTP every MCP client must send "
                f"`Authorization: Bearer <token>`; export a long random token in {self.config.http_token_env} "
                "and give it to the clients"
            )
        async with AsyncExitStack() as stack:
            await self.connect(stack)
            app = BearerRequired(self.server.streamable_http_app(host=host), token)
            server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))
            await server.serve()

    # --- MCP handlers ------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools)

    async def _call_tool(
        self, ctx: Any, params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        server_id = self.server_of.get(params.name)
        if server_id is None:
            return _tool_error(f"Unknown tool {params.name!r}: this gateway offers {', '.join(self.server_of)}.")
        arguments = params.arguments or {}
        try:
            asked = await self.register_call(server_id, params.name, arguments)
            if isinstance(asked, Verdict):
                verdict = asked
            else:
                served, call, approval = asked
                if approval["status"] == "pending":
                    pointed = await self._point(ctx, params, approval)
                    if isinstance(pointed, types.InputRequiredResult):
                        return pointed  # the client opens the page, then calls again: that call waits
                    try:
                        logger.info("HITL: %s.%s waits for a person (%s)", server_id, params.name, approval["id"])
                        approval = await self.client.wait(approval["id"], self.config.wait_timeout)
                    finally:
                        await _pointed_done(ctx, pointed, approval["id"])
                # Not run yet (else "already executed" or "in doubt"), what was approved, its receipt verifies.
                verdict = await self.client.judged(served, approval, call)
            # Run once: `started` is recorded before the upstream runs it, so a restarted gateway that finds
            # it without an outcome does not run the call again (its ledger shows it once).
            verdict = await self.client.start(verdict)
        except HitlError as error:  # fail closed: no answer from the portal is not an approval
            logger.warning("HITL: %s — %s.%s was not run", error, server_id, params.name)
            return _tool_error(f"The approval portal could not be asked, so the call was not run: {error}")
        if not verdict.allowed:
            if verdict.state in ("in_doubt", "already_executed"):
                logger.warning("HITL: %s.%s — %s", server_id, params.name, verdict.message)
            return _tool_error(verdict.message)
        to_run = verdict.arguments if verdict.edited else arguments
        try:
            result = await self.call_upstream(server_id, params.name, to_run)
        except Exception as error:  # the upstream died or refused: the approved call did not run
            result = _tool_error(f"{server_id} could not run {params.name}: {error}")
        if verdict.state == "approved":
            if result.is_error:
                verdict.error = RuntimeError(_text_of(result) or "the upstream tool reported an error")
            try:
                await self.client.report(verdict)
            except HitlError as error:  # the call ran; losing its outcome must not lose its result
                logger.warning("HITL: could not report the outcome of %s: %s", verdict.approval["id"], error)
            if verdict.edited:  # the model must know the call it made is not the call that ran
                edit = _core.canonical_json(verdict.arguments)
                who = (verdict.approval.get("decision") or {}).get("decided_by") or "a reviewer"
                note = types.TextContent(type="text", text=f"(Approved by {who} with edited arguments; ran as {edit}.)")
                result = result.model_copy(update={"content": [*result.content, note]})
        return result

    async def call_upstream(self, server_id: str, tool: str, arguments: dict) -> types.CallToolResult:
        """Call an upstream's tool. An upstream that asks the classic way (`await ctx.elicit()` inside the tool)
        cannot over the 2026 protocol: it is reconnected once over a session (the initialize handshake, whose
        back-channel carries its `elicitation/create` to the gateway's callback, then the portal) and the call
        made again there. As for the newer way's `input_required`, the tool is taken to ask before it acts."""
        try:
            return await self.upstreams[server_id].call_tool(tool, arguments)
        except MCPError as error:
            if NO_BACK_CHANNEL not in error.message or server_id in self.with_session:
                raise
        logger.info("HITL gateway: %s elicits from inside its tools; reconnecting it over a session", server_id)
        client = await self._session_client(server_id)
        return await client.call_tool(tool, arguments)

    async def _session_client(self, server_id: str) -> Client:
        assert self._stack is not None, "connect() first"
        upstream = next(upstream for upstream in self.config.upstreams if upstream.server_id == server_id)
        client = await self._stack.enter_async_context(
            Client(upstream.target(), elicitation_callback=self._elicitation_callback(server_id), mode="legacy")
        )
        # From now on every call goes through this session: the relay's pipe is to the first process. (The
        # version it agreed stays: a call relayed before is answered in the shape its client expects.)
        self.relay.pipes.pop(server_id, None)
        self.upstreams[server_id] = client
        self.with_session.add(server_id)
        return client

    async def _point(self, ctx: Any, params: types.CallToolRequestParams, approval: dict) -> Any:
        """Point a client that can open URLs at the request's page, where the person decides.

        2026 protocol: the first round answers an `InputRequiredResult` with a URL elicitation (the
        client opens it, then calls again, and that call waits). Before it: an `elicitation/create` in
        URL mode sent beside the wait (a task; `_pointed_done` ends it). None for any other client.
        """
        if ctx is None or not _supports_url_elicitation(ctx):
            return None
        url = f"{self.client.base_url}/hitl/approvals/{approval['id']}/"
        message = f"{params.name} on {self.server_of[params.name]} waits for a person's approval: {url}"
        if getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS:
            if (params.request_state or "").startswith(POINTED):
                return None  # the client opened the page already: this round waits
            request = types.ElicitRequest(params=types.ElicitRequestURLParams(message=message, url=url))
            return types.InputRequiredResult(
                input_requests={"hitl_review": request}, request_state=POINTED + approval["id"]
            )
        session = getattr(ctx, "session", None)
        if session is None or not getattr(session, "can_send_request", False):
            return None

        async def elicit() -> None:
            try:
                await session.elicit_url(message, url, approval["id"], related_request_id=ctx.request_id)
            except Exception as error:  # the client refused or went away: the wait goes on regardless
                logger.info("HITL: the client did not open %s: %s", url, error)

        return asyncio.ensure_future(elicit())

    async def register_call(self, server_id: str, tool: str, arguments: dict) -> Verdict | tuple[dict, GatedCall, dict]:
        """Register one call (unless no rule gates the server): a verdict at once, or (served, call, request)."""
        served = await self.served()
        call = self._call(served, server_id, tool, arguments, occurrence=0)
        verdict = _core.not_asked(served, call)
        if verdict is not None:
            if verdict.state == "inert":
                logger.info("%s — forwarding %s.%s", verdict.message, server_id, tool)
            return verdict
        gate = _core.gate_of(served, call)
        assert gate is not None
        base = f"{served['version']}:{_core.call_digest(target=server_id, operation=tool, arguments=arguments)}"
        occurrence = self._occurrence.get(base, 0)
        while True:
            call = self._call(served, server_id, tool, arguments, occurrence=occurrence, base=base)
            body = _core.gate_body(served, gate, call)
            approval, created = await self.client.register_created(body, call.idempotency_key)
            answered = _core.registered(approval, call)  # inert, or allowed by the rule's condition or shadow mode
            if answered is not None:
                logger.info("%s — forwarding %s.%s", answered.message, server_id, tool)
                return answered
            execution = (approval.get("execution") or {}).get("status")
            if (
                created
                or approval["status"] == "pending"
                or (approval["status"] == "approved" and execution in (None, "started"))
            ):
                # This call's own request: new (even if stored already decided, as in a halted run), or found
                # again after a restart (started and never reported: in doubt).
                break
            if approval.get("execution"):
                # An identical call of this run ran already (reported executed): this one is a new call.
                logger.info("HITL: %s.%s #%d already executed (%s); asking for this call anew",
                            server_id, tool, occurrence, approval["id"])  # fmt: skip
            occurrence += 1  # an identical earlier call ran, was rejected or expired: ask anew
        self._occurrence[base] = occurrence  # the next identical call starts here, finds it used, and moves on
        return served, call, approval

    async def decide(self, server_id: str, tool: str, arguments: dict) -> Verdict:
        """Ask the portal about one call (unless no rule gates the server) and wait for the answer."""
        asked = await self.register_call(server_id, tool, arguments)
        if isinstance(asked, Verdict):
            return asked
        served, call, approval = asked
        if approval["status"] == "pending":
            logger.info("HITL: %s.%s waits for a person (%s)", server_id, tool, approval["id"])
            approval = await self.client.wait(approval["id"], self.config.wait_timeout)
        # Not run yet (else "already executed"), what was approved, and its receipt verifies (receipts.py).
        verdict = await self.client.judged(served, approval, call)
        if verdict.state == "already_executed":
            logger.warning("HITL: %s.%s — %s", server_id, tool, verdict.message)
        return verdict

    # --- elicitation: an upstream asks its user; a person answers in the portal ---------------

    def _elicitation_callback(self, server_id: str) -> Any:
        async def callback(context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
            return await self.elicit(server_id, params)

        return callback

    async def elicit(self, server_id: str, params: Any) -> types.ElicitResult | types.ErrorData:
        """Ask an upstream's form-mode elicitation as a portal question; its answer as the result."""
        if getattr(params, "mode", "form") != "form":
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="This gateway asks people in form mode only: a URL elicitation is not passed on.",
            )
        schema = params.requested_schema
        try:
            title, questions, fields = elicitation.questions_of(params.message, schema)
        except elicitation.Unaskable as error:
            return types.ErrorData(code=types.INVALID_PARAMS, message=f"The portal cannot ask this: {error}")
        try:
            served = await self.served()
            if not _questions.questions_active(served):
                logger.info("%s — %s's elicitation cancelled", _questions.QUESTIONS_INERT_NOTICE, server_id)
                return types.ElicitResult(action="cancel")
            approval = await self._question(served, server_id, title, questions, schema)
            if approval.get("status") == "inert":
                logger.info("%s — %s's elicitation cancelled", approval["notice"], server_id)
                return types.ElicitResult(action="cancel")
            if approval["status"] == "pending":
                logger.info("HITL: %s asks a person (%s)", server_id, approval["id"])
                approval = await self.client.wait(approval["id"], self.config.wait_timeout)
        except HitlError as error:  # nobody could be asked: nobody chose anything
            logger.warning("HITL: %s — %s's elicitation cancelled", error, server_id)
            return types.ElicitResult(action="cancel")
        answers = _questions.answers_of(approval, questions)
        return types.ElicitResult(**elicitation.result_of(answers, fields, schema))

    async def _question(self, served: dict, server_id: str, title: str, questions: list[dict], schema: dict) -> dict:
        """Register the question under (run, server, digest + occurrence): a restarted gateway asked the same
        waits on the same question; once a question was answered, declined or expired, the same asks anew."""
        asked = json.dumps([title, questions, schema], sort_keys=True, ensure_ascii=False)
        base = f"elicit:{served['version']}:{_core.call_digest(target=server_id, operation='elicit', arguments=asked)}"
        occurrence = self._asked.get(base, 0)
        while True:
            approval = await self.client.request_question(
                served, questions, title=title, run_id=self.config.run_id, thread_id=server_id,
                call_id=f"{base}#{occurrence}", caller=self.config.caller,
            )  # fmt: skip
            if approval.get("status") in ("pending", "inert"):
                break
            occurrence += 1
        self._asked[base] = occurrence + 1 if approval.get("status") == "pending" else occurrence
        return approval

    def not_asked_now(self, server_id: str, tool: str) -> Verdict | None:
        """The verdict for a call the portal is not asked about, judged on a gate table still fresh;
        None when the call is gated, or the table is due for a refresh (the full path does that)."""
        if self._served is None or time.monotonic() - self._served_at > self.config.served_ttl:
            return None
        # A rule gates a whole server, never one tool: the arguments do not matter to this answer.
        verdict = _core.not_asked(self._served, self._call(self._served, server_id, tool, {}, occurrence=0))
        if verdict is not None and verdict.state == "inert":
            logger.info("%s — forwarding %s.%s", verdict.message, server_id, tool)
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


RELAY_ID = "hitl-relay-"  # ids the gateway gives relayed calls upstream; the SDK's own are integers
POINTED = "hitl-pointed:"  # request_state of a call whose client was pointed at the request's page


def _supports_url_elicitation(ctx: Any) -> bool:
    capabilities = getattr(getattr(ctx, "session", None), "client_capabilities", None)
    elicit = getattr(capabilities, "elicitation", None)
    return elicit is not None and getattr(elicit, "url", None) is not None


async def _pointed_done(ctx: Any, pointed: Any, approval_id: str) -> None:
    """The wait ended: tell the client its URL elicitation is complete, and stop asking it to open the page."""
    if not isinstance(pointed, asyncio.Future):
        return
    pointed.cancel()
    with suppress(Exception):  # a client that went away needs no notice
        await ctx.session.send_elicit_complete(approval_id, related_request_id=ctx.request_id)


class _Relay:
    """Ungated calls to stdio upstreams, passed through as JSON-RPC lines.

    Through the SDK an ungated call crosses two MCP sessions in the gateway — the server's and the client's, each
    with its memory streams, tasks, pydantic models and result validation — and that CPU, not the gateway's own
    check, was what the extra hop cost (docs/performance.md). The relay keeps only what the gateway must do: it
    reads the client's `tools/call` line off stdin, asks the question the full path asks first (is that server
    gated? on a gate table still fresh), and if not, writes the request to the upstream's stdin under an id of its
    own (`hitl-relay-N`); the answer line goes back to the client with the client's id, otherwise unchanged.
    Progress notifications for that call go back too, a `notifications/cancelled` from the client goes on to the
    upstream, and if the upstream dies the client gets the tool error the full path gives.

    To see the upstream's lines before the SDK does, the gateway runs the upstream process itself
    (`transport`); every line that is not the relay's reaches the SDK's client session as its own stdio
    transport would hand it over. The relay works only when both sides speak the same protocol
    version (the one the client initialised with, or its request envelope's, equals the one the
    gateway agreed with the upstream); otherwise, and for gated calls, unknown tools, a stale gate
    table, HTTP on either side, a line it cannot parse — the message goes to the SDK as before.
    """

    def __init__(self, gateway: Gateway):
        self.gateway = gateway
        self.out: asyncio.StreamWriter | None = None  # the client's stdout, once served on the event loop
        self.client_version: str | None = None  # what the client asked for in `initialize` (handshake era)
        self.pipes: dict[str, asyncio.StreamWriter] = {}  # server id → the upstream's stdin, while it runs
        self.versions: dict[str, str | None] = {}  # server id → the protocol version agreed with it
        self.pending: dict[str, tuple[str, str, Any, Any]] = {}  # relay id → server id, tool, client id, progress
        self.relay_ids: dict[Any, str] = {}  # client's request id → relay id (for cancellation)
        self.arguments: dict[str, Any] = {}  # relay id → the call's arguments (to call again through the SDK)
        self._count = 0

    # --- client → upstream (called by _LinesIn for each line the client sends) -----------------

    async def took(self, line: bytes) -> bool:
        """Relay this line if it is an ungated `tools/call` (or a cancellation of one); False leaves it to the SDK.

        A byte search first, so the messages the SDK handles pay nothing for the check."""
        if self.out is None or not any(
            word in line for word in (b'"tools/call"', b'"notifications/cancelled"', b'"initialize"')
        ):
            return False
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or not isinstance(message.get("params"), dict):
            return False
        method, params = message.get("method"), message["params"]
        if method == "initialize" and isinstance(params.get("protocolVersion"), str):
            self.client_version = params["protocolVersion"]
        elif method == "tools/call" and _request_id(message.get("id")):
            return await self._call(message, params)
        elif method == "notifications/cancelled" and params.get("requestId") in self.relay_ids:
            return await self._cancel(message, params)
        return False

    async def _call(self, message: dict, params: dict) -> bool:
        tool = params.get("name")
        server_id = self.gateway.server_of.get(tool) if isinstance(tool, str) else None
        if server_id not in self.pipes or not self._same_version(server_id, params):
            return False  # not ours, or the upstream is gone (the full path says so)
        if self.gateway.not_asked_now(server_id, tool) is None:  # gated, or the gate table is due for a refresh
            return False
        self._count += 1
        relay_id = f"{RELAY_ID}{self._count}"
        meta = params.get("_meta")
        progress = meta.get("progressToken") if isinstance(meta, dict) else None
        self.pending[relay_id] = (server_id, tool, message["id"], progress)
        self.relay_ids[message["id"]] = relay_id
        self.arguments[relay_id] = params.get("arguments") or {}
        await self._upstream(server_id, {**message, "id": relay_id, "params": self._answering(server_id, params)})
        return True

    def _answering(self, server_id: str, params: dict) -> dict:
        """The call's params with the gateway's own elicitation capability (2026: declared per request).

        Whatever the client behind us declared, it is the gateway that answers the upstream's form
        elicitations (through the portal), so that is what the upstream is told."""
        if self.versions.get(server_id) not in MODERN_PROTOCOL_VERSIONS:
            return params  # declared once at initialize, by the gateway's own client
        meta = dict(params.get("_meta") or {})
        capabilities = dict(meta.get(types.CLIENT_CAPABILITIES_META_KEY) or {})
        capabilities["elicitation"] = {"form": {}}
        meta[types.CLIENT_CAPABILITIES_META_KEY] = capabilities
        return {**params, "_meta": meta}

    async def _cancel(self, message: dict, params: dict) -> bool:
        relay_id = self.relay_ids.pop(params["requestId"])
        server_id = self.pending.pop(relay_id)[0]  # nobody waits for its answer any more
        self.arguments.pop(relay_id, None)
        await self._upstream(server_id, {**message, "params": {**params, "requestId": relay_id}})
        return True

    async def _upstream(self, server_id: str, message: dict) -> None:
        pipe = self.pipes.get(server_id)
        if pipe is not None:  # else it died meanwhile: `upstream_closed` answered its pending calls
            pipe.write(_line(message))
            with suppress(ConnectionError):  # a pipe that broke: the upstream's end of output says so
                await pipe.drain()

    def _same_version(self, server_id: str, params: dict) -> bool:
        agreed = self.versions.get(server_id)
        meta = params.get("_meta")
        envelope = meta.get(types.PROTOCOL_VERSION_META_KEY) if isinstance(meta, dict) else None
        if agreed in MODERN_PROTOCOL_VERSIONS:  # 2026 era: every request names its version
            return envelope == agreed
        return envelope is None and agreed is not None and self.client_version == agreed

    # --- upstream → client (called by `transport` for each line an upstream writes) ------------

    def answered(self, line: bytes) -> bool:
        """Pass an answer to a relayed call (or its progress) back to the client; False leaves it to the SDK."""
        if b'"' + RELAY_ID.encode() in line:
            message = _json_object(line)
            relay_id = message.get("id")
            if not (isinstance(relay_id, str) and relay_id.startswith(RELAY_ID) and "method" not in message):
                return False
            result, error = message.get("result"), message.get("error")
            asks = isinstance(result, dict) and result.get("resultType") == "input_required"
            # Asked the classic way (ctx.elicit() inside the tool), which a relayed call has no channel for.
            asks_classic = isinstance(error, dict) and NO_BACK_CHANNEL in str(error.get("message", ""))
            if asks or asks_classic:
                # The upstream needs input (an elicitation) first: a person answers it in the portal, never
                # the client behind us — so this call goes on through the SDK, which asks the gateway.
                if relay_id in self.pending:
                    asyncio.ensure_future(self._through_the_sdk(relay_id))
                return True
            entry = self.pending.pop(relay_id, None)
            self.arguments.pop(relay_id, None)
            if entry is not None:  # else the client cancelled it: nobody waits for the answer
                self.relay_ids.pop(entry[2], None)
                self._client({**message, "id": entry[2]})
            return True
        if b'"notifications/progress"' in line and self.pending:
            params = _json_object(line).get("params")
            token = params.get("progressToken") if isinstance(params, dict) else None
            if token is not None and any(entry[3] == token for entry in self.pending.values()):
                self._client(line)
                return True
        return False

    def upstream_closed(self, server_id: str) -> None:
        """The upstream's output ended: every call relayed to it gets the tool error the full path gives."""
        self.pipes.pop(server_id, None)
        for relay_id in [key for key, entry in self.pending.items() if entry[0] == server_id]:
            _, tool, client_id, _ = self.pending.pop(relay_id)
            self.relay_ids.pop(client_id, None)
            self.arguments.pop(relay_id, None)
            self._result(server_id, client_id, _tool_error(f"{server_id} could not run {tool}: Connection closed"))

    async def _through_the_sdk(self, relay_id: str) -> None:
        """Call a relayed tool again through the SDK's client, whose elicitation callback asks the portal.

        A first round that answered `input_required` ran nothing (the upstream asks before it acts), so
        calling again from the start is what the client's own retry would have done."""
        server_id, tool, client_id, _ = self.pending[relay_id]
        try:
            result = await self.gateway.call_upstream(server_id, tool, self.arguments.get(relay_id) or {})
        except Exception as error:  # the upstream died or refused: the call did not run
            result = _tool_error(f"{server_id} could not run {tool}: {error}")
        if self.pending.pop(relay_id, None) is None:
            return  # the client cancelled it meanwhile
        self.arguments.pop(relay_id, None)
        self.relay_ids.pop(client_id, None)
        self._result(server_id, client_id, result)

    def _result(self, server_id: str, client_id: Any, result: types.CallToolResult) -> None:
        answer = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        if self.versions.get(server_id) in MODERN_PROTOCOL_VERSIONS:
            answer["resultType"] = "complete"  # required from 2026 on, and absent before
        else:
            answer.pop("resultType", None)
        self._client({"jsonrpc": "2.0", "id": client_id, "result": answer})

    def _client(self, message: dict | bytes) -> None:
        assert self.out is not None
        # One write per line, as the SDK's stdout writer does, so its lines and ours never interleave.
        self.out.write(message if isinstance(message, bytes) else _line(message))

    # --- the upstream's process ----------------------------------------------------------------

    @asynccontextmanager
    async def transport(self, server_id: str, params: StdioServerParameters) -> AsyncIterator[tuple[Any, Any]]:
        """An MCP client transport to a stdio upstream (what the SDK's `stdio_client` does), that shows
        the relay each line the upstream writes before the SDK's session gets the rest."""
        process = await asyncio.create_subprocess_exec(
            params.command,
            *params.args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=get_default_environment() | (params.env or {}),
            cwd=params.cwd,
            start_new_session=True,  # its own process group, so stopping it stops its children too
            limit=64 * 1024 * 1024,
        )
        assert process.stdin is not None and process.stdout is not None
        to_session, session_reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        session_writes, from_session = anyio.create_memory_object_stream[SessionMessage](0)
        self.pipes[server_id] = process.stdin

        async def upstream_output() -> None:
            async with to_session:
                while line := await process.stdout.readline():
                    if line.strip() and not self.answered(line):
                        await to_session.send(_parsed(line))
            self.upstream_closed(server_id)

        async def session_output() -> None:
            async with from_session:
                async for message in from_session:
                    process.stdin.write(message.message.model_dump_json(by_alias=True, exclude_unset=True).encode())
                    process.stdin.write(b"\n")
                    try:
                        await process.stdin.drain()
                    except ConnectionError:
                        return  # the upstream is gone; its end of output closes the session

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(upstream_output)
            tasks.start_soon(session_output)
            try:
                yield session_reads, session_writes
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                tasks.cancel_scope.cancel()


async def _stop(process: asyncio.subprocess.Process) -> None:
    """As the MCP spec says (and the SDK's stdio transport does): close its stdin, give it 2 s to exit,
    then SIGTERM its process group, then SIGKILL."""
    assert process.stdin is not None
    process.stdin.close()
    for sent in (None, signal.SIGTERM, signal.SIGKILL):
        if sent is not None:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sent)
        with suppress(TimeoutError):
            await asyncio.wait_for(process.wait(), 2.0)
            return


def _request_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _json_object(line: bytes) -> dict:
    try:
        message = json.loads(line)
    except ValueError:
        return {}
    return message if isinstance(message, dict) else {}


def _line(message: dict) -> bytes:
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def _parsed(line: bytes) -> SessionMessage | Exception:
    """A line for the SDK's session, as its stdio transport would hand it over (a parse error as a value)."""
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError as error:
        logger.warning("HITL gateway: an upstream wrote a line that is not JSON-RPC: %s", error)
        return error


class _LinesIn:
    """stdin as the async line iterator stdio_server reads, on the event loop (no worker thread per line);
    the lines the relay takes never reach the SDK."""

    def __init__(self, reader: asyncio.StreamReader, relay: _Relay | None = None):
        self.reader, self.relay = reader, relay

    def __aiter__(self) -> _LinesIn:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self.reader.readline()
            if not line:
                raise StopAsyncIteration
            if self.relay is None or not await self.relay.took(line):
                return line.decode("utf-8", errors="replace")


class _LinesOut:
    """stdout as the async file stdio_server writes, on the event loop."""

    def __init__(self, writer: asyncio.StreamWriter):
        self.writer = writer

    async def write(self, text: str) -> None:
        self.writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self.writer.drain()


async def _asyncio_stdio(relay: _Relay | None = None) -> tuple[Any, Any] | tuple[()]:
    """Event-loop pipes for stdin/stdout when both are pipes or sockets (as an MCP client launches us):
    each message then skips the two thread hand-offs of the SDK's default file wrappers, and the relay
    can answer ungated calls itself. Anything else (a terminal, a file) gets the SDK's own stdio handling."""
    import stat

    if not all(stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) for mode in (os.fstat(fd).st_mode for fd in (0, 1))):
        return ()
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=64 * 1024 * 1024)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(0, "rb", closefd=False))
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(1, "wb", closefd=False)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    if relay is not None:
        relay.out = writer
    return _LinesIn(reader, relay), _LinesOut(writer)


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
