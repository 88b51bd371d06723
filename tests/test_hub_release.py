"""edge/hub.py's release at a graceful shutdown: every held wait ends at once as time-up, and so does every
wait that comes after it (edge/server.py calls it from uvicorn's shutdown)."""

import asyncio

from edge.hub import WaitHub, release_waits


def test_release_ends_every_held_wait_and_every_later_one_at_once():
    async def scenario() -> tuple[list, bool | None, int]:
        hub = WaitHub()
        hub.listening.set()  # as if listening: nothing to re-read
        try:
            held = [hub.register(f"apr_{n}") for n in range(3)]
            waits = [asyncio.ensure_future(hub.hold(w, token_id=1, user_id=None, seconds=30)) for w in held]
            await asyncio.sleep(0)
            release_waits(asyncio.get_running_loop())  # no hub of this loop in the registry: nothing happens
            hub.release_all()
            ended = await asyncio.wait_for(asyncio.gather(*waits), 2)
            later = await asyncio.wait_for(hub.hold(hub.register("apr_late"), token_id=1, user_id=None, seconds=30), 2)
            return ended, later, hub.count
        finally:
            await hub.close()

    ended, later, left = asyncio.run(scenario())
    assert ended == [False, False, False] and later is False and left == 0
