"""Engines waiting through the Python asyncio client (AsyncHitlClient.wait), for bench/cluster.py: a
separate process, loopback only, bounded in time (--deadline seconds).

    python -m bench.cluster_engines --url http://127.0.0.1:8740 --token T --ids-file ids.txt --out answers.json

Writes, once every wait has ended: each request's answer (status, and when it arrived: epoch seconds),
the errors surfaced to engines, and the reconnects the client logged instead of surfacing.
"""

import argparse
import asyncio
import json
import logging
import resource
import time

from hitl_client import AsyncHitlClient


class Reconnects(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.count = 0
        self.first: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1
        if len(self.first) < 5:
            self.first.append(record.getMessage()[:200])


class TimedClient(AsyncHitlClient):
    """Records each long-poll's start and end (epoch seconds) per request: where a late answer waited."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.polls: dict[str, list[tuple[float, float]]] = {}

    async def get(self, approval_id: str, *, wait: float = 0) -> dict:
        started = time.time()
        try:
            return await super().get(approval_id, wait=wait)
        finally:
            self.polls.setdefault(approval_id, []).append((started, time.time()))


async def run(args: argparse.Namespace) -> dict:
    ids = [line.strip() for line in open(args.ids_file) if line.strip()]
    reconnects = Reconnects()
    log = logging.getLogger("hitl_client.bench")
    log.addHandler(reconnects)
    log.propagate = False
    client = TimedClient(args.url, args.token, timeout=60, log=log)
    answers: dict[str, tuple[str, float]] = {}
    errors: dict[str, str] = {}

    async def engine(public_id: str) -> None:
        try:
            answer = await client.wait(public_id, timeout=args.deadline)
            answers[public_id] = (answer["status"], time.time())
        except Exception as exc:  # noqa: BLE001 — surfaced to the engine: counted
            errors[public_id] = f"{type(exc).__name__}: {exc}"[:200]

    tasks = []
    for index, public_id in enumerate(ids):
        tasks.append(asyncio.ensure_future(engine(public_id)))
        if index % 50 == 49:
            await asyncio.sleep(50 / args.arrivals)  # engines arrive over time, not all in one instant
    await asyncio.gather(*tasks)
    return {
        "answers": answers,
        "errors": errors,
        "reconnects": reconnects.count,
        "reconnect_examples": reconnects.first,
        "polls": {public_id: polls[-4:] for public_id, polls in client.polls.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--ids-file", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--deadline", type=float, default=600)
    parser.add_argument("--arrivals", type=float, default=2000, help="engines starting to wait, a second")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    result = asyncio.run(run(args))
    with open(args.out, "w") as out:
        json.dump(result, out)


if __name__ == "__main__":
    main()
