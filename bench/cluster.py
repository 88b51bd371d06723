"""Section `--only cluster`: the portal run like production — PgBouncer (transaction mode), two nodes
behind nginx (launch/proxies.py's configurations, as `make cluster` runs them), engines waiting through
the Python asyncio client.

- registration through PgBouncer beside direct (8 engines, in turns: bench/server.py's load_in_turns);
- BENCH_CLUSTER_WAITS engines (default 10,000) waiting across the two nodes, in client processes of
  up to 7,500 each (two at least); meanwhile the reviewer API's p95 (its queue, through nginx) and
  decision → engine for 50 requests;
- a rolling restart under those waits (SIGTERM each node in turn, then start it again; the next once
  the restarted one holds its share of the waits, as docs/deploy.md says) while requests are decided:
  the errors surfaced to engines, and each decision's delay to its engine (p99);
- then every other request decided: every engine answered, with its decision.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.harness import RESULTS, ROOT, Bench, log, vacuum
from bench.report import row
from bench.server import GUNICORN, PORT, load_in_turns, stop_group, wait_until_answering
from launch.proxies import start_nginx, start_pgbouncer

WAITS = int(os.environ.get("BENCH_CLUSTER_WAITS", "10000"))
ENGINE_PROCESSES = max(2, -(-WAITS // 7500))  # each holds a socket a wait: under its open-files limit
DIRECT_PORT, POOLED_PORT, NODE_PORTS, NGINX_PORT, PGBOUNCER_PORT = (
    PORT + 10,
    PORT + 11,
    (PORT + 12, PORT + 13),
    PORT + 14,
    PORT + 15,
)
# Engines starting to wait, a second, in all: about what the two nodes' first reads keep up with.
ARRIVALS = 1000
# nginx listens on one port per engine process: one address's ephemeral ports (about 28,000) would
# bound the engines' connections to it, and a wait ends in TIME_WAIT each time an engine asks again.
ENGINE_PORTS = [NGINX_PORT] + [PORT + 20 + n for n in range(ENGINE_PROCESSES - 1)]
METRICS_TOKEN = "bench-cluster-metrics"
WORKDIR = RESULTS / "cluster"
SAMPLES = 50


class Node:
    """The portal under gunicorn (bench settings) on `port`, restartable on the same port."""

    def __init__(self, port: int, env: dict[str, str], workers: int) -> None:
        self.port, self.env, self.workers = port, env, workers
        self.start()

    def start(self) -> None:
        self.events = getattr(self, "events", [])
        self.events.append(("start", time.time()))
        command = [str(Path(sys.executable).parent / "gunicorn"), "hitl_portal.asgi:application"]
        command += ["--bind", f"127.0.0.1:{self.port}", *GUNICORN]
        command[command.index("--workers") + 1] = str(self.workers)
        self.log = open(WORKDIR / f"node-{self.port}.log", "a")
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_until_answering(self.process, name=f"node {self.port}", log=self.log.name, port=self.port)
        self.events.append(("answering", time.time()))

    def terminate(self) -> float:
        """SIGTERM to gunicorn's master, as a deploy's restart sends it; seconds until it has exited."""
        started = time.monotonic()
        import psutil

        workers = psutil.Process(self.process.pid).children()
        cpu = {w.pid: sum(w.cpu_times()[:2]) for w in workers}
        self.events.append(("sigterm", time.time()))
        self.process.send_signal(signal.SIGTERM)
        spent = dict(cpu)
        while self.process.poll() is None:
            for w in workers:
                try:
                    spent[w.pid] = sum(w.cpu_times()[:2])
                except psutil.Error:
                    pass
            time.sleep(0.2)
        self.events.append(("drain_cpu_s", sum(spent.values()) - sum(cpu.values())))
        self.events.append(("exited", time.time()))
        self.log.close()
        return time.monotonic() - started

    def waiting(self) -> int:
        import urllib.request

        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}
        )
        try:
            text = urllib.request.urlopen(request, timeout=10).read().decode()
        except OSError:
            return 0
        line = next(line for line in text.splitlines() if line.startswith("hitl_waiting_engines "))
        return int(float(line.split()[1]))

    def stop(self) -> None:
        stop_group(self.process, self.log)


def _env(database: str, **extra: str) -> dict[str, str]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "BENCH_DATABASE_URL": database}
    env.update(PGAPPNAME="hitl-bench-cluster", HITL_METRICS_TOKEN=METRICS_TOKEN, HITL_MAX_WAITS_PER_KEY="100000")
    env.update(HITL_TRUSTED_PROXIES="127.0.0.1", **extra)
    return env


def run(bench: Bench) -> list[dict]:
    from urllib.parse import urlsplit

    from django.db import connection

    connection.close()  # the servers' workers get the connections
    direct = os.environ["BENCH_DATABASE_URL"]
    parts = urlsplit(direct)
    password = parts.password or "bench-pgbouncer"
    WORKDIR.mkdir(parents=True, exist_ok=True)
    bouncer = start_pgbouncer(
        WORKDIR / "pgbouncer",
        port=PGBOUNCER_PORT,
        postgres_host=parts.hostname or "127.0.0.1",
        postgres_port=parts.port or 5432,
        user=parts.username or "postgres",
        password=password,
        stdout=open(WORKDIR / "pgbouncer.log", "w"),
        stderr=subprocess.STDOUT,
    )
    pooled_url = f"postgres://{parts.username or 'postgres'}:{password}@127.0.0.1:{PGBOUNCER_PORT}{parts.path}"
    pooled = {"HITL_DB_TRANSACTION_POOLER": "true", "HITL_LISTEN_DATABASE_URL": direct}
    try:
        time.sleep(0.5)
        rows = registration(bench, _env(direct), _env(pooled_url, **pooled))
        rows += waits(bench, _env(pooled_url, **pooled))
    finally:
        bouncer.terminate()
        bouncer.wait(timeout=10)
    return rows


def registration(bench: Bench, direct_env: dict, pooled_env: dict) -> list[dict]:
    log("registration through PgBouncer beside direct: 8 engines, in turns")
    nodes = [Node(DIRECT_PORT, direct_env, 2), Node(POOLED_PORT, pooled_env, 2)]
    try:
        ratios = []
        for _ in range(bench.rounds):
            side_direct, side_pooled = load_in_turns(
                bench.world,
                ports=[DIRECT_PORT, POOLED_PORT],
                method="POST",
                path="/api/v1/approvals",
                concurrency=8,
                duration=bench.duration,
                body=bench.world.registration_body(),
            )
            ratios.append(side_pooled["throughput_rps"] / side_direct["throughput_rps"])
    finally:
        for node in nodes:
            node.stop()
    ratio = sorted(ratios)[len(ratios) // 2]
    bench.results["cluster_registration"] = {"ratios": ratios, "direct": side_direct, "pooled": side_pooled}
    return [
        row(
            "registration through PgBouncer, 8 engines: throughput",
            side_pooled["throughput_rps"],
            side_direct["throughput_rps"],
            " req/s",
            ratio,
            "≥ 0.9× direct",
            ratio >= 0.9,
            (min(ratios), max(ratios)),
        )
    ]


def pending(bench: Bench, count: int) -> list[str]:
    """`count` pending requests of the benchmark's workspace, seeded in one INSERT, then analyzed: this
    machine's PostgreSQL runs without autovacuum, and unanalyzed, an engine's poll by public id walks
    the workspace's every request (the planner takes the workspace's index for the unique one)."""
    from datetime import UTC, datetime

    from django.db import connection

    bench.world.seed(count=count, status="pending", tag="clus", created_from=datetime.now(UTC), step_ms=1, ttl_s=3600)
    vacuum()
    with connection.cursor() as cursor:
        # Seeded ids are digits after the tag: a registration's random id may begin with "clus" too.
        cursor.execute(
            "SELECT public_id FROM approvals_approvalrequest WHERE public_id ~ %s ORDER BY 1", [r"^apr_clus[0-9]+$"]
        )
        return [r[0] for r in cursor.fetchall()]


def decide(world, ids: list[str]) -> float:
    """Decide `ids` in one transaction; the moment it committed (epoch seconds)."""
    from django.db import transaction

    from approvals.models import ApprovalRequest
    from approvals.review.decide import approval_decide

    committed: list[float] = []
    with transaction.atomic():
        transaction.on_commit(lambda: committed.append(time.time()))
        for approval in ApprovalRequest.objects.filter(public_id__in=ids).select_related("config"):
            approval_decide(approval=approval, user=world.reviewer, decision="approve")
    return committed[0]


def reviewer_token(bench: Bench) -> str:
    from workspaces.services import token_create

    return token_create(workspace=bench.world.workspace, user=bench.world.reviewer)[1]


def reviewer_api(token: str, duration: float) -> dict:
    """The reviewer's queue (GET /api/v1/approvals?status=pending) through nginx, 2 at once."""
    command = [sys.executable, "-m", "bench.load", "--port", str(NGINX_PORT), "--token", token]
    command += ["--path", "/api/v1/approvals?status=pending", "-c", "2", "-d", str(duration), "--warmup", "1"]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=2 * duration + 120)
    if out.returncode != 0:
        raise SystemExit(f"load generator failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout)


def engines(bench: Bench, ids: list[str]) -> list[tuple[subprocess.Popen, Path]]:
    started = []
    for n in range(ENGINE_PROCESSES):
        ids_file, out = WORKDIR / f"engines-{n}.ids", WORKDIR / f"engines-{n}.json"
        ids_file.write_text("\n".join(ids[n::ENGINE_PROCESSES]) + "\n")
        out.unlink(missing_ok=True)
        command = [sys.executable, "-m", "bench.cluster_engines", "--url", f"http://127.0.0.1:{ENGINE_PORTS[n]}"]
        command += ["--token", bench.world.engine_token, "--ids-file", str(ids_file), "--out", str(out)]
        command += ["--arrivals", str(ARRIVALS / ENGINE_PROCESSES)]
        started.append((subprocess.Popen(command, cwd=ROOT), out))
    return started


def held(nodes: list[Node], count: int, seconds: float = 420) -> None:
    """Until the nodes hold 99% of `count` waits: a wait answered at its 30 s end (still pending) is
    between its answer and its next long-poll for a moment, uncounted by either node."""
    deadline = time.monotonic() + seconds
    while (holding := sum(node.waiting() for node in nodes)) < 0.99 * count:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {holding} of {count} waits held")
        time.sleep(0.5)


def pct(samples: list[float], p: float) -> float | None:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(p * (len(ordered) - 1)))] if ordered else None


def rolling_restart(bench: Bench, nodes: list[Node], during: list[str]) -> dict:
    """SIGTERM each node in turn and start it again, as a deploy does (docs/deploy.md): the next node only
    once the restarted one holds its share of the waits. Meanwhile `during` is decided, two every 0.2 s."""
    from django.db import connection

    commits: dict[str, float] = {}
    done = threading.Event()

    def decider() -> None:
        try:
            for start in range(0, len(during), 2):
                if done.is_set():
                    break
                batch = during[start : start + 2]
                commits.update(dict.fromkeys(batch, decide(bench.world, batch)))
                time.sleep(0.2)
        finally:
            connection.close()

    thread = threading.Thread(target=decider)
    thread.start()
    exits, cores = [], Cores()
    try:
        for node in nodes:
            exits.append(node.terminate())
            node.start()
            if node is not nodes[-1]:
                share(node, WAITS / len(nodes))
    finally:
        done.set()
        thread.join()
    return {
        "commits": commits,
        "exit_s": exits,
        "events": {node.port: node.events for node in nodes},
        "cpu_s": cores.spent(),
    }


def share(node: Node, fair: float, seconds: float = 90) -> None:
    """Until `node` holds 40% of its fair share of the waits: engines come back to it as their long-polls
    end (30 s) — what a deploy watches (hitl_waiting_engines) before restarting the next node."""
    deadline = time.monotonic() + seconds
    while node.waiting() < 0.4 * fair and time.monotonic() < deadline:
        time.sleep(0.5)
    node.events.append(("holds_share", time.time()))


class Cores:
    """CPU seconds by kind of process on this machine while it runs (sampled each second, so a process
    that exits keeps what it spent): where the two cores went during the restart."""

    KINDS = ("cluster_engines", "gunicorn", "nginx", "pgbouncer", "postgres")

    def __init__(self) -> None:
        from urllib.parse import urlsplit

        self.database = urlsplit(os.environ["BENCH_DATABASE_URL"]).path.lstrip("/")
        self.first: dict[int, float] = {}
        self.last: dict[int, tuple[str, float]] = {}
        self.stop = threading.Event()
        self.sample()
        self.first = {pid: spent for pid, (_, spent) in self.last.items()}
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def sample(self) -> None:
        import psutil

        for process in psutil.process_iter(["cmdline", "cpu_times"]):
            line, times = " ".join(process.info["cmdline"] or []), process.info["cpu_times"]
            if times is not None:
                kind = next((k for k in self.KINDS if k in line), "bench" if "bench" in line else "other")
                if kind == "postgres" and self.database not in line:
                    kind = "other"  # another database's backend: someone else's work on this machine
                self.last[process.pid] = (kind, times.user + times.system)

    def run(self) -> None:
        while not self.stop.wait(1.0):
            self.sample()

    def spent(self) -> dict[str, float]:
        self.stop.set()
        self.thread.join()
        self.sample()
        totals: dict[str, float] = {}
        for pid, (kind, spent) in self.last.items():
            totals[kind] = round(totals.get(kind, 0.0) + spent - self.first.get(pid, 0.0), 1)
        return totals


def nginx_workers() -> int:
    """One per core, or more where a process may not open the two connections each wait holds here:
    this machine caps open files at 20,000 a process, and nginx cannot raise it (worker_rlimit_nofile)."""
    import resource

    per_process = resource.getrlimit(resource.RLIMIT_NOFILE)[1] - 1000
    return max(os.cpu_count() or 1, -(-int(2.2 * WAITS) // per_process))


def holding_cost(seconds: float = 30) -> dict[str, float]:
    """CPU cores by kind of process while the waits are only held: each engine asks again as its 30 s
    long-poll ends, so the machine serves WAITS / 30 polls a second with nothing decided."""
    cores = Cores()
    time.sleep(seconds)
    return {kind: round(spent / seconds, 2) for kind, spent in cores.spent().items()}


def waits(bench: Bench, env: dict) -> list[dict]:
    # Long: one run in order — nodes, waits held, figures under them, the restart, the last decisions.
    ids = pending(bench, WAITS)
    during_count = min(1000, WAITS // 4)  # decided through the whole restart, two every 0.2 s
    samples, during = ids[:SAMPLES], ids[SAMPLES : SAMPLES + during_count]
    rest = ids[SAMPLES + during_count :]
    token = reviewer_token(bench)
    from django.db import connection

    connection.close()
    nodes = [Node(port, env, 1) for port in NODE_PORTS]
    nginx = start_nginx(
        WORKDIR / "nginx",
        listen=[f"127.0.0.1:{port}" for port in ENGINE_PORTS],
        workers=nginx_workers(),
        nodes=[f"127.0.0.1:{port}" for port in NODE_PORTS],
        stdout=open(WORKDIR / "nginx.log", "w"),
        stderr=subprocess.STDOUT,
    )
    crowd: list[tuple[subprocess.Popen, Path]] = []
    try:
        time.sleep(0.5)
        log(f"{WAITS:,} engines waiting across two nodes behind nginx")
        crowd = engines(bench, ids)
        started = time.monotonic()
        held(nodes, WAITS)
        ramp_s = time.monotonic() - started
        log(f"all {WAITS:,} held after {ramp_s:.0f} s; what holding them costs, then the reviewer API under them")
        holding = holding_cost()
        log(f"holding {WAITS:,} waits: {holding}")
        api = reviewer_api(token, bench.duration)
        log(f"reviewer API p95 {api.get('p95_ms')} ms under {WAITS:,} waits")
        log("decision → engine, one at a time")
        sample_commits = {}
        for public_id in samples:
            sample_commits[public_id] = decide(bench.world, [public_id])
            time.sleep(0.1)
        log("rolling restart: SIGTERM each node in turn, then start it again, deciding meanwhile")
        restart = rolling_restart(bench, nodes, during)
        log(f"each node exited in {', '.join(f'{s:.1f}' for s in restart['exit_s'])} s after its SIGTERM")
        held(nodes, WAITS - SAMPLES - len(restart["commits"]))
        rest = [i for i in during if i not in restart["commits"]] + rest
        log("deciding the rest")
        for start in range(0, len(rest), 500):
            decide(bench.world, rest[start : start + 500])
        outputs = []
        for process, out in crowd:
            process.wait(timeout=600)
            outputs.append(json.loads(out.read_text()))
    finally:
        for process, _ in crowd:
            if process.poll() is None:
                process.kill()
        for node in nodes:
            node.stop()
        nginx.terminate()
        nginx.wait(timeout=10)
    return figures(bench, outputs, api, sample_commits, restart, ramp_s, holding)


def figures(  # noqa: PLR0913 — one run's parts, each measured apart
    bench: Bench, outputs: list[dict], api: dict, sample_commits: dict, restart: dict, ramp_s: float, holding: dict
):
    answers = {k: v for out in outputs for k, v in out["answers"].items()}
    errors = sum(len(out["errors"]) for out in outputs)
    reconnects = sum(out["reconnects"] for out in outputs)
    approved = sum(1 for status, _ in answers.values() if status == "approved")
    to_engine = [(answers[i][1] - at) * 1000 for i, at in sample_commits.items() if i in answers]
    extra = [answers[i][1] - at for i, at in restart["commits"].items() if i in answers]
    result = bench.results["cluster"] = {
        "waits": WAITS,
        "ramp_s": ramp_s,
        "holding_cores": holding,
        "approved": approved,
        "errors": errors,
        "error_examples": [e for out in outputs for e in list(out["errors"].values())[:3]],
        "reconnects": reconnects,
        "reconnect_examples": [e for out in outputs for e in out["reconnect_examples"]],
        "reviewer_api": {k: v for k, v in api.items() if k.endswith(("_ms", "_rps")) or k in ("errors", "ok")},
        "decision_to_engine_ms": {"p50": pct(to_engine, 0.5), "p95": pct(to_engine, 0.95)},
        "restart": {
            "exit_s": restart["exit_s"],
            "decided": len(extra),
            "p99_s": pct(extra, 0.99),
            "cpu_s": restart["cpu_s"],
        },
        "restart_timeline": {
            "events": restart["events"],
            "delays": sorted((at, answers[i][1] - at, i) for i, at in restart["commits"].items() if i in answers),
            "polls": {i: polls for out in outputs for i, polls in out["polls"].items() if i in restart["commits"]},
        },
    }
    p95, api_p95, extra_p99 = result["decision_to_engine_ms"]["p95"], api.get("p95_ms"), pct(extra, 0.99)
    return [
        row(
            f"waits across two nodes answered after decisions (of {WAITS:,})",
            approved,
            None,
            "",
            None,
            "30,000",
            approved == WAITS and errors == 0,
        ),
        row(
            f"reviewer API p95 under {WAITS:,} waits (queue, through nginx)",
            api_p95,
            None,
            " ms",
            None,
            "≤ 150 ms",
            api_p95 is not None and api_p95 <= 150,
        ),
        row(
            f"decision → engine p95 under {WAITS:,} waits",
            p95,
            None,
            " ms",
            None,
            "≤ 50 ms",
            p95 is not None and p95 <= 50,
        ),
        row(
            f"rolling restart under {WAITS:,} waits: errors surfaced to engines",
            errors,
            None,
            "",
            None,
            "0",
            errors == 0,
        ),
        row(
            "rolling restart: p99 delay of a decision to its engine",
            extra_p99,
            None,
            " s",
            None,
            "≤ 2 s",
            extra_p99 is not None and extra_p99 <= 2,
        ),
    ]
