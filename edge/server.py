"""The production server's worker: uvicorn under gunicorn (Makefile: SERVE), with a header timeout,
taking connections one at a time.

uvicorn closes a connection idle between requests (gunicorn's --keep-alive), and the edge gives a
body BODY_TIMEOUT_SECONDS (http.py), but nothing bounds the headers: 500 connections trickling a
header byte at a time (slowloris) were held open for good. Here a request's headers must be
complete within HEADER_TIMEOUT_SECONDS of its first byte (or of the connection, for a client that
sends nothing), else the connection is closed.

The workers share gunicorn's listening socket, and each one's event loop (uvloop's, libuv's) accepts
every connection waiting whenever it wakes: eight reviewers opening their tabs at once all landed
in whichever worker woke first, and their pages took turns on its one core while the other stood
idle (docs/performance.md). So each worker accepts one connection at a time (OneAtATime) and then
leaves the socket to the others for ACCEPT_SPACING_SECONDS: every worker is woken for each
connection, and one not busy with a page takes it. A keep-alive connection stays with the worker
that took it, so this is where the spread is decided. The spacing caps each worker at a thousand
new connections a second; a burst beyond that waits in the listen backlog (gunicorn's, 2048).
"""

import asyncio
import errno
import functools
import logging
import os
import socket
import sys

from gunicorn.arbiter import Arbiter
from uvicorn import Server
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn_worker import UvicornWorker

logger = logging.getLogger("uvicorn.error")

HEADER_TIMEOUT_SECONDS = float(os.environ.get("HITL_HEADER_TIMEOUT", "10"))


class HeaderTimeoutProtocol(HttpToolsProtocol):
    _header_timer = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self._arm()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._header_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()

    def connection_lost(self, exc) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._header_timer = self.loop.call_later(HEADER_TIMEOUT_SECONDS, self._too_slow)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()


# libuv's timers count milliseconds: the shortest pause there is.
ACCEPT_SPACING_SECONDS = 0.001
# Out of file descriptors (10,000 waiting engines is 10,000 sockets): stop accepting this long, as asyncio does.
ACCEPT_PAUSE_SECONDS = 1.0
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


class OneAtATime:
    """A listening socket whose connections this loop takes one per wake-up (uvicorn keeps it as a server)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, sock: socket.socket, protocol_factory, *, ssl=None, spacing: float = 0
    ) -> None:
        self._loop, self._sock, self._factory, self._ssl, self._spacing = loop, sock, protocol_factory, ssl, spacing
        self._closed = False
        self._starting: set[asyncio.Task] = set()
        sock.setblocking(False)
        loop.add_reader(sock.fileno(), self._accept)

    def _accept(self) -> None:
        try:
            conn, _ = self._sock.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return  # the other worker took it
        except OSError as exc:
            if exc.errno not in _OUT_OF_RESOURCES:
                raise
            logger.warning("accept() failed (%s): pausing for %.1f s", exc, ACCEPT_PAUSE_SECONDS)
            self._loop.remove_reader(self._sock.fileno())
            self._loop.call_later(ACCEPT_PAUSE_SECONDS, self._resume)
            return
        conn.setblocking(False)
        task = self._loop.create_task(self._connect(conn))
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)
        if self._spacing:
            self._loop.remove_reader(self._sock.fileno())
            self._loop.call_later(self._spacing, self._resume)

    async def _connect(self, conn: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(self._factory, conn, ssl=self._ssl)
        except Exception:  # a TLS handshake that failed, a client gone already: its socket only
            conn.close()

    def _resume(self) -> None:
        if not self._closed:
            self._loop.add_reader(self._sock.fileno(), self._accept)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._loop.remove_reader(self._sock.fileno())

    async def wait_closed(self) -> None:
        if self._starting:
            await asyncio.wait(self._starting)


class OneAtATimeServer(Server):
    spacing = ACCEPT_SPACING_SECONDS  # one worker alone has nobody to leave a connection to: 0

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=[])  # the lifespan and the server's state; no socket of its own
        factory = functools.partial(
            self.config.http_protocol_class,
            config=self.config,
            server_state=self.server_state,
            app_state=self.lifespan.state,
        )
        loop = asyncio.get_running_loop()
        self.servers = [
            OneAtATime(loop, sock, factory, ssl=self.config.ssl, spacing=self.spacing) for sock in sockets or []
        ]


class Worker(UvicornWorker):
    # lifespan "on": a worker whose startup fails (warm-up, threads, LISTEN hub: edge/app.py) stops with
    # a boot error; uvicorn's "auto" would log it and serve without them.
    CONFIG_KWARGS = {**UvicornWorker.CONFIG_KWARGS, "http": HeaderTimeoutProtocol, "lifespan": "on"}

    async def _serve(self) -> None:  # UvicornWorker's, with OneAtATimeServer
        self.config.app = self.wsgi
        server = OneAtATimeServer(config=self.config)
        if self.cfg.workers == 1:
            server.spacing = 0
        self._install_sigquit_handler()
        await server.serve(sockets=self.sockets)
        if not server.started:
            sys.exit(Arbiter.WORKER_BOOT_ERROR)
