"""The ASGI application the production server runs: the edge's calls, else Django (one handler, one rule).

For every HTTP request, first the body (http.read_body: refused by Content-Length before reading,
stopped at the limit when chunked, within a time limit); then `calls.owns(scope)` picks who
answers: the edge, or Django's ASGIHandler with the full middleware. The lifespan protocol starts
the process's LISTEN hub and its connection-returning threads (after warming Django: common/warm.py,
before the first connection is taken), freezes what startup built out of the collector's way, and
closes the hub at shutdown.
"""

from django.core.handlers.asgi import ASGIHandler

from common.warm import settle_collector, warm_process

from . import calls, hub, threads
from .http import BodyRefused, ClientGone, django_request, read_body, secured, send_response, with_body


class Portal:
    def __init__(self) -> None:
        self.django = ASGIHandler()

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        if scope["type"] != "http":
            await self.django(scope, receive, send)
            return
        try:
            body = await read_body(scope, receive)
        except ClientGone:
            return
        except BodyRefused as refused:
            # Close after answering: else the server would go on reading (and discarding) the rest of the body.
            refused.response["Connection"] = "close"
            await send_response(send, secured(django_request(scope), refused.response))
            return
        if calls.owns(scope):
            await calls.answer(scope, body, receive, send)  # the body is read: `receive` brings the hang-up
            return
        scope, receive = with_body(scope, body, receive)
        await self.django(scope, receive, send)

    async def _lifespan(self, receive, send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                warm_process()  # nothing is served yet: the loop has nothing else to do
                threads.install()
                hub.hub()  # LISTEN from the start: the engine key cache (workspaces/authentication.py) needs it
                settle_collector()  # last: what startup built is frozen
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await hub.close_hubs()
                await send({"type": "lifespan.shutdown.complete"})
                return
