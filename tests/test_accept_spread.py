"""edge/server.py's OneAtATime: a worker takes one connection, then leaves the socket to the others a moment.

On a plain asyncio loop with a real listening socket: what the server's workers do with gunicorn's.
"""

import asyncio
import socket

from edge.server import OneAtATime


class Counted(asyncio.Protocol):
    made: list = []

    def connection_made(self, transport) -> None:
        Counted.made.append(transport)


def _listening() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    return sock


async def _accepted_over(sock: socket.socket, *, spacing: float, clients: int, seconds: float) -> list[int]:
    """How many connections were taken after each tenth of `seconds`, `clients` having connected at once."""
    Counted.made = []
    loop = asyncio.get_running_loop()
    server = OneAtATime(loop, sock, Counted, spacing=spacing)
    peers = [socket.create_connection(sock.getsockname()) for _ in range(clients)]
    counts = []
    try:
        for _ in range(10):
            await asyncio.sleep(seconds / 10)
            counts.append(len(Counted.made))
    finally:
        server.close()
        await server.wait_closed()
        for transport in Counted.made:
            transport.close()
        for peer in peers:
            peer.close()
    return counts


def test_it_takes_one_connection_then_leaves_the_socket_for_the_spacing():
    with _listening() as sock:
        counts = asyncio.run(_accepted_over(sock, spacing=0.2, clients=3, seconds=0.5))
    assert counts[0] == 1  # the first at once; the next only after 0.2 s, whoever is waiting
    assert counts[1] == 1
    assert counts[-1] == 3


def test_without_spacing_it_takes_every_waiting_connection_at_once():
    with _listening() as sock:
        counts = asyncio.run(_accepted_over(sock, spacing=0, clients=5, seconds=0.2))
    assert counts[0] == 5


def test_closed_it_takes_no_more():
    async def scenario(sock: socket.socket) -> int:
        Counted.made = []
        server = OneAtATime(asyncio.get_running_loop(), sock, Counted, spacing=0.05)
        server.close()
        await server.wait_closed()
        peer = socket.create_connection(sock.getsockname())
        await asyncio.sleep(0.2)
        peer.close()
        return len(Counted.made)

    with _listening() as sock:
        assert asyncio.run(scenario(sock)) == 0
