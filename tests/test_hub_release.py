"""edge/hub.py's release at a graceful shutdown (edge/server.py calls it from uvicorn's shutdown): every held
wait ends as time-up, HITL_RELEASE_PER_SECOND a second, so the other node is not handed thousands at once;
a wait not given back yet still hears its decision; a wait that comes after the release ends at once."""

import asyncio

import pytest
from django.test import override_settings

from edge import hub as hub_module
from edge.hub import WaitHub, release_waits


@pytest.fixture(autouse=True)
def no_database(monkeypatch):
    """The hub's connections go nowhere: nothing it re-reads wakes the waits these tests hold."""
    monkeypatch.setattr(hub_module, "conninfo", lambda: "host=127.0.0.1 port=1 connect_timeout=1")


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


@override_settings(HITL_RELEASE_PER_SECOND=200)
def test_release_gives_waits_back_at_its_pace_and_a_held_one_still_hears_its_decision():
    async def scenario() -> tuple[int, bool | None, list, float]:
        hub = WaitHub()
        hub.listening.set()
        loop = asyncio.get_running_loop()
        try:
            held = [hub.register(f"apr_{n}") for n in range(100)]
            waits = [asyncio.ensure_future(hub.hold(w, token_id=1, user_id=None, seconds=30)) for w in held]
            await asyncio.sleep(0)
            started = loop.time()
            hub.release_all()
            await asyncio.sleep(0.1)
            given_back = sum(w.done() for w in waits)
            held[-1].wake()  # its request decided meanwhile: the NOTIFY reaches it here
            ended = await asyncio.wait_for(asyncio.gather(*waits), 5)
            return given_back, ended[-1], ended[:-1], loop.time() - started
        finally:
            await hub.close()

    given_back, decided, released, seconds = asyncio.run(scenario())
    assert 1 <= given_back <= 60  # 200 a second: about 20 in 0.1 s, not all 100 at once
    assert decided is True and set(released) == {False}
    assert 0.4 <= seconds < 5  # the 100 over half a second at least
