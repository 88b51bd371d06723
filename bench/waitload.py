"""The waiting engines: N raw asyncio sockets, each long-polling one pending request again and again.

A separate process (the server under test never shares its CPU accounting with it), loopback only,
bounded in count (--waiters) and in time (--duration after the ramp, --ramp-timeout for the ramp).
Prints `ready <n>` on stdout once every socket has sent its first long-poll, then, at the end, one
line of JSON: answers by status, connection errors, how many were still waiting. Every socket asks
again as soon as it is answered; with --spread the first waits end evenly over one wait's length,
so the asking-again is steady from the start instead of all sockets at once every --wait seconds.

    python -m bench.waitload --port 8123 --tokens-file t.txt --ids-file ids.txt --waiters 1000 -d 20
"""

import argparse
import asyncio
import json
import resource
import sys
import time
from collections import Counter

CONNECT_AT_ONCE = 200  # sockets opening at the same moment: a ramp, not a SYN flood on the backlog


def raise_fd_limit(wanted: int) -> int:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = min(max(soft, wanted), hard) if hard != resource.RLIM_INFINITY else max(soft, wanted)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


async def read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length:
        await reader.readexactly(length)
    return status


async def run(args: argparse.Namespace) -> dict:
    tokens = [line.strip() for line in open(args.tokens_file) if line.strip()]
    ids = [line.strip() for line in open(args.ids_file) if line.strip()]
    statuses: Counter[int] = Counter()
    errors: Counter[str] = Counter()
    sent_first = 0
    ready = asyncio.Event()
    stop = asyncio.Event()
    gate = asyncio.Semaphore(CONNECT_AT_ONCE)
    waiting = 0

    def long_poll(slot: int, wait: float) -> bytes:
        return (
            f"GET /api/v1/approvals/{ids[slot % len(ids)]}?wait={wait:g} HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{args.port}\r\nAuthorization: Bearer {tokens[slot % len(tokens)]}\r\n\r\n"
        ).encode()

    async def engine(slot: int) -> None:
        nonlocal sent_first, waiting
        request = long_poll(slot, args.wait)
        # --spread: the first waits end evenly over one wait's length, so the engines ask again at a
        # steady rate (waiters / wait a second), as engines long since started do; else all at once.
        opening = long_poll(slot, max(1.0, round(args.wait * (slot + 1) / args.waiters, 1))) if args.spread else request
        first = True
        writer = None
        try:
            async with gate:
                reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", args.port), 30)
            while not stop.is_set():
                writer.write(opening if first else request)
                await writer.drain()
                if first:
                    first = False
                    sent_first += 1
                    if sent_first == args.waiters:
                        ready.set()
                waiting += 1
                try:
                    read = asyncio.ensure_future(read_response(reader))
                    done, _ = await asyncio.wait({read, stopped}, return_when=asyncio.FIRST_COMPLETED)
                    if read not in done:
                        read.cancel()
                        return
                    statuses[read.result()] += 1
                finally:
                    waiting -= 1
        except (OSError, asyncio.IncompleteReadError, TimeoutError, ValueError) as exc:
            errors[type(exc).__name__] += 1
            if first:
                sent_first += 1  # it will never send: do not hold the ramp for it
                if sent_first == args.waiters:
                    ready.set()
        finally:
            if writer is not None:
                writer.close()

    stopped = asyncio.ensure_future(stop.wait())  # one future every engine's read races against
    if not args.waiters:  # level 0: the pages alone, for the waits' own cost beside it
        ready.set()
    tasks = [asyncio.create_task(engine(i)) for i in range(args.waiters)]
    started = time.monotonic()
    try:
        await asyncio.wait_for(ready.wait(), args.ramp_timeout)
    except TimeoutError:
        pass
    ramp_s = time.monotonic() - started
    print(f"ready {sent_first - sum(errors.values())}", flush=True)
    await asyncio.sleep(args.duration)
    still_waiting = waiting
    stop.set()
    if tasks:
        await asyncio.wait(tasks, timeout=10)
    return {
        "waiters": args.waiters,
        "ramp_s": ramp_s,
        "answers": {str(k): v for k, v in sorted(statuses.items())},
        "errors": dict(errors),
        "waiting_at_end": still_waiting,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens-file", required=True, help="engine keys, one a line, used in turn")
    parser.add_argument("--ids-file", required=True, help="pending request ids, one a line, one per waiter")
    parser.add_argument("--waiters", type=int, required=True)
    parser.add_argument("--wait", type=float, default=30)
    parser.add_argument(
        "--spread", action="store_true", help="first waits spread over --wait: re-polls at a steady rate"
    )
    parser.add_argument("-d", "--duration", type=float, default=15, help="seconds to hold the waits after the ramp")
    parser.add_argument("--ramp-timeout", type=float, default=60)
    args = parser.parse_args(argv)
    raise_fd_limit(args.waiters + 100)
    json.dump(asyncio.run(run(args)), sys.stdout)
    print()


if __name__ == "__main__":
    main()
