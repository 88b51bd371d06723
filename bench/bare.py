"""The bare ASGI floor: the same INSERT and SELECT as the Django floor over psycopg's async pool, no framework.

What Python on this machine allows for one engine call: uvicorn's HTTP parsing, one JSON parse, one
round trip to PostgreSQL, one JSON answer. Run by bench/floors.py under gunicorn + uvicorn workers.
"""

import json
import os

from psycopg_pool import AsyncConnectionPool

from common.ids import new_public_id

PREFIX = "/api/v1/approvals"
_pool = AsyncConnectionPool(
    os.environ["BENCH_DATABASE_URL"].replace("postgres://", "postgresql://", 1),
    min_size=2,
    max_size=8,
    open=False,
    kwargs={"autocommit": True},
)


async def app(scope, receive, send) -> None:
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await _pool.open(wait=True)
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await _pool.close()
                await send({"type": "lifespan.shutdown.complete"})
                return
    path, method = scope["path"], scope["method"]
    if method == "POST" and path == PREFIX:
        body = await _read(receive)
        public_id = new_public_id("apr")
        async with _pool.connection() as conn:
            await conn.execute(
                "INSERT INTO bench_floor_request (public_id, workspace_id, body) VALUES (%s, %s, %s)",
                [public_id, 0, json.dumps(json.loads(body))],
            )
        return await _answer(send, 201, {"id": public_id, "status": "pending"})
    if method == "GET" and path.startswith(PREFIX + "/"):
        async with _pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT public_id, status, expires_at FROM approvals_approvalrequest WHERE public_id = %s",
                [path[len(PREFIX) + 1 :]],
            )
            row = await cursor.fetchone()
        if row is None:
            return await _answer(send, 404, {"detail": "No such request."})
        return await _answer(send, 200, {"id": row[0], "status": row[1], "expires_at": row[2].isoformat()})
    # The login page is what bench/server.py's readiness check asks for.
    return await _answer(send, 200 if path == "/login/" else 404, {})


async def _read(receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _answer(send, status: int, payload: dict) -> None:
    body = json.dumps(payload).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
