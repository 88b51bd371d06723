"""The load generator: a separate process of threads, each with one keep-alive `http.client` connection.

Bounded in time (warm-up + duration) and in count (--max-requests); loopback only. Prints JSON.
    python -m bench.load --port 8123 --token T --method POST --path /api/v1/approvals --body '{…}' -c 8 -d 5
With --ports A,B it drives the servers in turns of --slice seconds, -d seconds each (run_sides).
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
    return run_sides(args, [args.port])[args.port]


def run_sides(args: argparse.Namespace, ports: list[int]) -> dict[int, dict]:
    """Drive `ports` in turns of --slice seconds each, every worker on the same port at once.

    One server is measured at a time; the turns are short so that all sides meet the same machine (a
    shared machine's speed can move within seconds). A turn ends when every worker's last request has
    come back (a barrier), so no request of one side runs in the other's turn; a side's throughput is
    its requests over the time its turns took, warm-up turns left out.
    """
    ids = [line.strip() for line in open(args.ids_file)] if args.ids_file else [""]
    id_cycle = itertools.cycle(ids)
    id_lock = threading.Lock()
    body = args.body.encode() if args.body else None
    # Each turn: (port, seconds, seconds not measured at its start). One port: a single turn whose
    # first --warmup seconds warm up; several: whole warm-up turns of each first.
    if len(ports) == 1:
        turns = [(ports[0], args.warmup + args.duration, args.warmup)]
    else:
        slice_s = min(args.slice, args.duration)
        warmup_turns = max(1, round(args.warmup / slice_s)) if args.warmup > 0 else 0
        measured_turns = max(1, round(args.duration / slice_s))
        turns = [(port, slice_s, slice_s) for _ in range(warmup_turns) for port in ports]
        turns += [(port, slice_s, 0.0) for _ in range(measured_turns) for port in ports]
    sides = {port: {"samples": [], "statuses": {}, "errors": 0, "busy_s": 0.0} for port in ports}
    turn_state = {"port": ports[0], "ends": 0.0, "measure_from": 0.0}
    budget = [args.max_requests]
    lock = threading.Lock()
    barrier = threading.Barrier(args.concurrency + 1)

    def worker() -> None:
        conns = {port: http.client.HTTPConnection("127.0.0.1", port, timeout=60) for port in ports}
        headers = {"Authorization": f"Bearer {args.token}", "Content-Type": args.content_type}
        for _ in turns:
            barrier.wait()  # the turn starts
            port, ends, side = turn_state["port"], turn_state["ends"], sides[turn_state["port"]]
            while time.perf_counter() < ends:
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
                    conns[port].request(args.method, path, body=body, headers=headers)
                    response = conns[port].getresponse()
                    response.read()
                    status = response.status
                except (OSError, http.client.HTTPException):
                    conns[port].close()
                    conns[port] = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                    with lock:
                        side["errors"] += 1
                    continue
                t1 = time.perf_counter()
                if t0 >= turn_state["measure_from"]:
                    with lock:
                        side["samples"].append(t1 - t0)
                        side["statuses"][status] = side["statuses"].get(status, 0) + 1
            barrier.wait()  # the turn has ended: every request of it has come back
        for conn in conns.values():
            conn.close()

    threads = [threading.Thread(target=worker) for _ in range(args.concurrency)]
    for thread in threads:
        thread.start()
    for port, seconds, unmeasured in turns:
        started = time.perf_counter()
        turn_state.update(port=port, ends=started + seconds, measure_from=started + unmeasured)
        barrier.wait()
        barrier.wait()
        if unmeasured < seconds:
            sides[port]["busy_s"] += time.perf_counter() - started - unmeasured
    for thread in threads:
        thread.join()
    return {port: _figures(args, side) for port, side in sides.items()}


def _figures(args: argparse.Namespace, side: dict) -> dict:
    samples, statuses = side["samples"], side["statuses"]
    ok = sum(n for status, n in statuses.items() if 200 <= status < 300)
    busy = side["busy_s"] or args.duration
    return {
        "concurrency": args.concurrency,
        "duration_s": round(busy, 3),
        "requests": len(samples),
        "ok": ok,
        "statuses": {str(k): v for k, v in sorted(statuses.items())},
        "errors": side["errors"],
        "throughput_rps": ok / busy,
        "p50_ms": (percentile(samples, 50) or 0) * 1000,
        "p95_ms": (percentile(samples, 95) or 0) * 1000,
        "p99_ms": (percentile(samples, 99) or 0) * 1000,
        "mean_ms": (statistics.fmean(samples) if samples else 0) * 1000,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, help="one server; or --ports")
    parser.add_argument("--ports", help="servers to drive in turns (comma-separated): one JSON object per port")
    parser.add_argument("--slice", type=float, default=0.5, help="seconds of each turn with --ports")
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
    args = parser.parse_args(argv)
    if args.ports:
        ports = [int(port) for port in args.ports.split(",")]
        json.dump({str(port): figures for port, figures in run_sides(args, ports).items()}, sys.stdout)
    elif args.port:
        json.dump(run(args), sys.stdout)
    else:
        parser.error("give --port or --ports")


if __name__ == "__main__":
    main()
