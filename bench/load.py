"""The load generator: a separate process of threads, each with one keep-alive `http.client` connection.

Bounded in time (warm-up + duration) and in count (--max-requests); loopback only. Prints JSON.
    python -m bench.load --port 8123 --token T --method POST --path /api/v1/approvals --body '{…}' -c 8 -d 5
"""

import argparse
import http.client
import itertools
import json
import statistics
import sys
import threading
import time
import uuid


def percentile(samples: list[float], p: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def run(args: argparse.Namespace) -> dict:
    ids = [line.strip() for line in open(args.ids_file)] if args.ids_file else [""]
    id_cycle = itertools.cycle(ids)
    id_lock = threading.Lock()
    body = args.body.encode() if args.body else None
    start = time.perf_counter()
    measure_from = start + args.warmup
    stop_at = measure_from + args.duration
    latencies: list[list[float]] = [[] for _ in range(args.concurrency)]
    statuses: dict[int, int] = {}
    errors = [0]
    budget = [args.max_requests]
    lock = threading.Lock()

    def worker(slot: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
        headers = {"Authorization": f"Bearer {args.token}", "Content-Type": args.content_type}
        while True:
            now = time.perf_counter()
            if now >= stop_at:
                break
            with lock:
                if budget[0] <= 0:
                    break
                budget[0] -= 1
            with id_lock:
                path = args.path.replace("{id}", next(id_cycle))
            if args.idempotency:
                headers["Idempotency-Key"] = uuid.uuid4().hex
            t0 = time.perf_counter()
            try:
                conn.request(args.method, path, body=body, headers=headers)
                response = conn.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=60)
                with lock:
                    errors[0] += 1
                continue
            t1 = time.perf_counter()
            if t0 >= measure_from and t1 <= stop_at:
                latencies[slot].append(t1 - t0)
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
        conn.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(args.concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    samples = [x for slot in latencies for x in slot]
    ok = sum(n for status, n in statuses.items() if 200 <= status < 300)
    return {
        "concurrency": args.concurrency,
        "duration_s": args.duration,
        "requests": len(samples),
        "ok": ok,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "errors": errors[0],
        "throughput_rps": ok / args.duration,
        "p50_ms": (percentile(samples, 50) or 0) * 1000,
        "p95_ms": (percentile(samples, 95) or 0) * 1000,
        "p99_ms": (percentile(samples, 99) or 0) * 1000,
        "mean_ms": (statistics.fmean(samples) if samples else 0) * 1000,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--method", default="GET")
    parser.add_argument("--path", required=True, help="may contain {id}, filled from --ids-file in turn")
    parser.add_argument("--ids-file")
    parser.add_argument("--body")
    parser.add_argument("--content-type", default="application/json")
    parser.add_argument("--idempotency", action="store_true", help="a fresh Idempotency-Key per request")
    parser.add_argument("-c", "--concurrency", type=int, default=1)
    parser.add_argument("-d", "--duration", type=float, default=5.0)
    parser.add_argument("--warmup", type=float, default=1.0)
    parser.add_argument("--max-requests", type=int, default=1_000_000)
    json.dump(run(parser.parse_args(argv)), sys.stdout)


if __name__ == "__main__":
    main()
