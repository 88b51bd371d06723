"""The production server's worker: uvicorn's stock worker under gunicorn (Makefile: SERVE), with a
header timeout.

uvicorn closes a connection idle between requests (gunicorn's --keep-alive), and the edge gives a
body BODY_TIMEOUT_SECONDS (http.py), but neither uvicorn nor gunicorn's async workers bound the
headers: 500 connections trickling a header byte at a time (slowloris) were held open for good.
Here a request's headers must be complete within HEADER_TIMEOUT_SECONDS of its first byte (or of
the connection, for a client that sends nothing), else the connection is closed. It is uvicorn's
own httptools protocol, given to uvicorn through its public `http` setting (CONFIG_KWARGS); the
worker is otherwise uvicorn-worker's, unchanged. A proxy in front (docs/deploy.md) can bound
both as well.

The same protocol gives held waits back at a graceful shutdown (its public `shutdown()`, which
uvicorn calls on every connection once it has stopped accepting): a deploy's SIGTERM would
otherwise hold each long-poll to its end, up to 30 s, and cut off the rest at gunicorn's
graceful timeout.
"""

import os

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn_worker import UvicornWorker

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

    def shutdown(self) -> None:
        """uvicorn's graceful shutdown (SIGTERM: a deploy) calls this on every open connection, after it
        stopped accepting. Held long-polls are answered with the request as it stands (200, still
        pending), at edge/hub.py's pace, and close after their answer, so their engines ask again —
        through the proxy, on another node — instead of being cut off with a reset or a 502 at the
        graceful timeout."""
        from edge.hub import release_waits  # Django is set up by now; not when gunicorn imports the worker

        release_waits(self.loop)
        super().shutdown()

    def _too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing():
            self.transport.close()


class Worker(UvicornWorker):
    # lifespan "on": a worker whose startup fails (warm-up, threads, LISTEN hub: edge/app.py) stops with
    # a boot error; uvicorn's "auto" would log it and serve without them.
    CONFIG_KWARGS = {**UvicornWorker.CONFIG_KWARGS, "http": HeaderTimeoutProtocol, "lifespan": "on"}
