"""The portal under gunicorn, and the load generator (`bench/load.py`) run against it in floor/portal pairs."""

import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import IO

from bench.harness import RESULTS, ROOT, World

# BENCH_PORT: another checkout benchmarking on the same machine may hold the default.
PORT = int(os.environ.get("BENCH_PORT", "8731"))
# The production server (Makefile: make serve): gunicorn supervising uvicorn workers, one per core.
GUNICORN = ["--worker-class", "edge.server.Worker", "--workers", "2", "--keep-alive", "30", "--timeout", "60"]
# The two floors beside it (bench/floors.py): Django under gthread 3 × 4, and a bare ASGI app.
DJANGO_FLOOR_PORT = PORT + 1
BARE_FLOOR_PORT = PORT + 2


class Server:
    def __init__(self, url: str) -> None:
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "BENCH_DATABASE_URL": url}
        env["PGAPPNAME"] = "hitl-bench-server"
        self.log = open(RESULTS / "gunicorn.log", "w")
        self.process = subprocess.Popen(
            [
                str(Path(sys.executable).parent / "gunicorn"),
                "hitl_portal.asgi:application",
                "--bind",
                f"127.0.0.1:{PORT}",
                *GUNICORN,
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_until_answering(self.process, name="gunicorn", log="bench/results/gunicorn.log")
        except SystemExit:
            self.stop()  # never leave a server behind holding the port (and a database's connections)
            raise

    def stop(self) -> None:
        stop_group(self.process, self.log)


def stop_group(process: subprocess.Popen, log: IO) -> None:
    """Stop a server started in its own session (master and workers): SIGTERM, SIGKILL after 30 s."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    log.close()


def wait_until_answering(
    process: subprocess.Popen,
    *,
    name: str,
    log: str,
    port: int | None = None,
    seconds: float = 60,
    path: str = "/login/",
    status: int = 200,
) -> None:
    """Until the server on `port` (PORT as it is now: bench/audit.py moves it) answers `path` with
    `status` (the portal: its login page); SystemExit if it exits or stays silent."""
    port = port or PORT
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{name} exited with {process.returncode}; see {log}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", path)
            if conn.getresponse().status == status:
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"{name} did not answer within {seconds:.0f} s")


def load(world: World, *, method: str, path: str, concurrency: int, duration: float, port: int = PORT, **extra) -> dict:
    """One run of the separate load-generator process against the server on `port` (the portal's by default)."""
    return _load_generator(world, ["--port", str(port)], method, path, concurrency, duration, extra)


def load_in_turns(
    world: World, *, ports: list[int], method: str, path: str, concurrency: int, duration: float, **extra
) -> list[dict]:
    """One load-generator process driving `ports` in half-second turns, `duration` seconds each (bench/load.py)."""
    ports_arg = ",".join(str(port) for port in ports)
    by_port = _load_generator(world, ["--ports", ports_arg], method, path, concurrency, duration, extra)
    return [by_port[str(port)] for port in ports]


def _load_generator(world: World, target: list[str], method, path, concurrency, duration, extra) -> dict:
    command = [sys.executable, "-m", "bench.load", *target, "--token", world.engine_token, "--method", method]
    command += ["--path", path, "-c", str(concurrency), "-d", str(duration), "--warmup", "1"]
    if "body" in extra:
        command += ["--body", json.dumps(extra["body"]), "--idempotency"]
    if "content_type" in extra:
        command += ["--content-type", extra["content_type"]]
    if "ids_file" in extra:
        command += ["--ids-file", str(extra["ids_file"])]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=2 * duration + 120)
    if out.returncode != 0:
        raise SystemExit(f"load generator failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def paired(world: World, *, path: str, rounds: int, **load_args) -> dict:
    """The portal and its two floors on the same `path`, `rounds` times: each round sees the same machine.

    Floors: Django + DRF + one INSERT/SELECT under gthread 3 × 4 ("floor"), and a bare ASGI app doing
    the same over psycopg's async pool ("bare": the limit Python allows). A ratio is the median of the
    rounds' ratios, so one noisy run on a shared machine moves it less; each side's figures are the
    medians of its rounds. The portal and the floor its target is set against are driven by one load
    generator in half-second turns (load_in_turns): a shared machine's speed can move within
    seconds, for every process alike, and turns that short let both meet the same machine. The
    bare floor, a reference, runs alone after them.
    """
    ports = {"portal": PORT, "floor": DJANGO_FLOOR_PORT, "bare": BARE_FLOOR_PORT}
    runs: dict[str, list[dict]] = {side: [] for side in ports}
    for round_number in range(rounds):
        pair = ["portal", "floor"] if round_number % 2 == 0 else ["floor", "portal"]  # who goes first
        for side, figures in zip(
            pair, load_in_turns(world, ports=[ports[side] for side in pair], path=path, **load_args), strict=True
        ):
            runs[side].append(figures)
        runs["bare"].append(load(world, path=path, port=ports["bare"], **load_args))

    def ratios(floor: str) -> list[float]:
        return [
            portal["throughput_rps"] / under["throughput_rps"] if under["throughput_rps"] else 0.0
            for under, portal in zip(runs[floor], runs["portal"], strict=True)
        ]

    return {
        **{side: _median_run(side_runs) for side, side_runs in runs.items()},
        "ratios": ratios("floor"),
        "bare_ratios": ratios("bare"),
    }


def _median_run(runs: list[dict]) -> dict:
    merged = {key: statistics.median(run[key] for run in runs) for key in runs[0] if key.endswith(("_ms", "_rps"))}
    for key in ("requests", "ok", "errors"):
        merged[key] = sum(run[key] for run in runs)
    merged["rounds"] = runs
    return merged
