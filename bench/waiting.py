"""`make bench BENCH_ARGS=--waiting`: thousands of engines long-polling while a reviewer works.

For each server and each level (100 / 1,000 / 3,000 / 10,000 concurrent waits), twice — the waits
held, then asking again at a steady rate (RE_POLLING): a separate load process
(bench/waitload.py, raw asyncio sockets) keeps the waits; meanwhile this process measures
the reviewer list API and the Approvals tab with 8 reviewers at once (p50/p95 over all their
requests; target p95 ≤ 150 ms), decision → waiting engine for 20 decisions (target p95 ≤ 20 ms
after COMMIT), the database connections the server holds (pg_stat_activity) and the server's
memory (RSS of its whole process group). "deployed" is `make serve`'s layout; a thread-per-waiter
gthread server is there to compare.

    BENCH_DATABASE_URL=postgres://…/hitl_bench python -m bench --waiting [--servers deployed,gthread] \
        [--levels 100,1000]
"""

import http.client
import itertools
import json
import os
import resource
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from http.cookies import SimpleCookie
from pathlib import Path

from bench.server import stop_group, wait_until_answering

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# BENCH_WAITING_PORT: another checkout benchmarking on the same machine may hold the default.
PORT = int(os.environ.get("BENCH_WAITING_PORT", "8741"))
BIN = Path(sys.executable).parent
APP_NAME = "hitl-bench-server"
ENGINE_KEYS = 20  # 10,000 waits over 20 keys: 500 a key, under HITL_MAX_WAITS_PER_KEY on any process
LEVELS = (100, 1_000, 3_000, 10_000)
WORKERS = "2"  # one per core
REVIEWERS = 8  # at once, each with its own connection
# Each level is measured twice: the waits held (all opened in the ramp, none answered before the
# figures are taken), then re-polling at a steady rate (bench/waitload.py --spread: waiters / 30
# long-polls a second, as engines waiting for good do), which is what the server carries for good.
RE_POLLING = ", re-polling"
REVIEWER_TARGET_MS = 150  # p95 of the reviewer list API and of the Approvals tab
DECISION_TARGET_MS = 20  # p95, decision's COMMIT → the waiting engine's whole answer

SERVERS = {
    # Today's deploy (README before this change): a thread per waiting engine.
    "gthread": [BIN / "gunicorn", "hitl_portal.wsgi", "--worker-class", "gthread", "--workers", "4"]
    + ["--threads", "16", "--timeout", "60", "--keep-alive", "30"],
    # make serve: gunicorn supervising the edge's uvicorn workers (edge/server.py).
    "deployed": [BIN / "gunicorn", "hitl_portal.asgi:application", "--worker-class"]
    + ["edge.server.Worker", "--workers", WORKERS, "--timeout", "60", "--keep-alive", "30"],
    "uvicorn": [BIN / "uvicorn", "hitl_portal.asgi:application", "--workers", WORKERS, "--no-access-log"]
    + ["--timeout-keep-alive", "30", "--lifespan", "on"],
    "granian": [BIN / "granian", "--interface", "asgi", "--workers", WORKERS, "--no-ws", "--log-level", "warning"]
    + ["--backpressure", "100000", "hitl_portal.asgi:application"],
}


def log(message: str) -> None:
    print(f"[bench waiting {time.strftime('%H:%M:%S')}] {message}", flush=True)


def percentile(samples: list[float], p: float) -> float | None:
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


class Server:
    def __init__(self, name: str, url: str) -> None:
        argv = [str(part) for part in SERVERS[name]]
        argv += ["--port", str(PORT)] if name == "granian" else []
        argv += ["--host", "127.0.0.1", "--port", str(PORT)] if name == "uvicorn" else []
        argv += ["--bind", f"127.0.0.1:{PORT}"] if Path(argv[0]).name == "gunicorn" else []
        env = {**os.environ, "DJANGO_SETTINGS_MODULE": "bench.settings", "BENCH_DATABASE_URL": url}
        env["PGAPPNAME"] = APP_NAME
        self.log = open(RESULTS / f"waiting-{name}.log", "w")
        self.process = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_until_answering(self.process, name=name, log=self.log.name, port=PORT)

    def _group(self) -> list[str]:
        """The pids of the server's whole process group (master and workers)."""
        pids = []
        for pid in os.listdir("/proc"):
            try:
                if pid.isdigit() and os.getpgid(int(pid)) == self.process.pid:
                    pids.append(pid)
            except OSError:
                continue
        return pids

    def rss_mib(self) -> float:
        """Resident memory of the server's whole process group."""
        total = 0
        for pid in self._group():
            try:
                with open(f"/proc/{pid}/statm") as statm:
                    total += int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            except (OSError, ValueError):
                continue
        return total / 2**20

    def cpu_s(self) -> float:
        """CPU time (user + system) the server's processes have used so far: what the waits cost it."""
        total = 0
        for pid in self._group():
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
            except (OSError, ValueError, IndexError):
                continue
        return total / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        stop_group(self.process, self.log)


class Bench:
    def __init__(self, url: str) -> None:
        from bench.harness import World, recreate_database, setup_django

        log("recreating the bench database")
        recreate_database(url)
        setup_django(url)
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        self.url = url
        self.world = World()
        from workspaces.services import token_create

        self.engine_tokens = [
            token_create(workspace=self.world.workspace, engine_name=f"waiting-{i}")[1] for i in range(ENGINE_KEYS)
        ]
        self.reviewer_token = token_create(workspace=self.world.workspace, user=self.world.reviewer)[1]
        self.session_cookie = self._session()
        now = datetime.now(UTC)
        # The reviewer's queue is full (150 pending shown), history behind it, and a pending request per waiter.
        self.world.seed(
            count=20_000,
            status="approved",
            tag="hist",
            created_from=now - timedelta(days=5),
            step_ms=20_000,
            ttl_s=86400,
        )
        self.world.seed(
            count=max(LEVELS) + 500,
            status="pending",
            tag="wait",
            created_from=now - timedelta(hours=1),
            step_ms=100,
            ttl_s=86400,
        )
        from bench.harness import sql, vacuum

        vacuum()
        ids = [row[0] for row in self._rows("SELECT public_id FROM approvals_approvalrequest WHERE status = 'pending'")]
        self.waited, self.to_decide = ids[: max(LEVELS)], ids[max(LEVELS) :]
        (RESULTS / "waiting-ids.txt").write_text("\n".join(self.waited) + "\n")
        (RESULTS / "waiting-tokens.txt").write_text("\n".join(self.engine_tokens) + "\n")
        self.sql = sql
        from django.db import connection

        connection.close()

    def _rows(self, statement: str) -> list[tuple]:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(statement)
            return cursor.fetchall()

    def _session(self) -> str:
        """A logged-in browser session for the reviewer, made the way django.contrib.auth makes one."""
        from django.conf import settings
        from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
        from django.contrib.sessions.backends.db import SessionStore

        session = SessionStore()
        session[SESSION_KEY] = str(self.world.reviewer.pk)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[-1]
        session[HASH_SESSION_KEY] = self.world.reviewer.get_session_auth_hash()
        session.create()
        return session.session_key

    def browser_cookies(self) -> str:
        """What a reviewer's browser sends with the tab: its session, and the CSRF cookie the first page set."""
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
        try:
            conn.request("GET", "/hitl/approvals/", headers={"Cookie": f"sessionid={self.session_cookie}"})
            response = conn.getresponse()
            response.read()
            set_cookie = SimpleCookie(", ".join(response.headers.get_all("Set-Cookie") or []))
        finally:
            conn.close()
        csrf = set_cookie.get("csrftoken")
        return f"sessionid={self.session_cookie}" + (f"; csrftoken={csrf.value}" if csrf else "")

    # ------------------------------------------------------------------------------------ figures

    def reviewer_latencies(self, path: str, headers: dict, repeats: int) -> dict:
        """REVIEWERS people asking for `path` at once, `repeats` times each; p50/p95 over all their requests."""
        results: list[tuple[list[float], int]] = []
        threads = []
        for _ in range(REVIEWERS):
            thread = threading.Thread(target=lambda: results.append(self._one_reviewer(path, headers, repeats)))
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join()
        times = [t for reviewer_times, _ in results for t in reviewer_times]
        failures = sum(failed for _, failed in results)
        return {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95), "ok": len(times), "failed": failures}

    def _one_reviewer(self, path: str, headers: dict, repeats: int) -> tuple[list[float], int]:
        times, failures = [], 0
        conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=15)
        budget = time.monotonic() + 45  # a server that has fallen over is measured in failures, not in hours
        for _ in range(repeats):
            if time.monotonic() > budget:
                failures += 1
                continue
            t0 = time.perf_counter()
            try:
                conn.request("GET", path, headers=headers)
                response = conn.getresponse()
                response.read()
                ok = response.status == 200
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=15)
                ok = False
            elapsed = time.perf_counter() - t0
            if ok:
                times.append(elapsed * 1000)
            else:
                failures += 1
        conn.close()
        return times, failures

    def decision_latencies(self, count: int) -> dict:
        """From the decision's commit (on_commit) to the waiting engine's full answer, one at a time."""
        from django.db import connection, transaction

        from approvals.models import ApprovalRequest
        from approvals.review.decide import approval_decide

        samples, failures = [], 0
        for _ in range(count):
            if failures >= 3:  # the server is not answering long-polls: three are enough to say so
                break
            public_id = self.to_decide.pop()
            answered: list[float] = []
            statuses: list = []

            def engine(public_id: str = public_id, answered: list = answered, statuses: list = statuses) -> None:
                conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=30)
                try:
                    conn.request(
                        "GET",
                        f"/api/v1/approvals/{public_id}?wait=20",
                        headers={"Authorization": f"Bearer {self.engine_tokens[0]}"},
                    )
                    response = conn.getresponse()
                    body = response.read()
                    answered.append(time.perf_counter())
                    statuses.append(json.loads(body).get("status") if response.status == 200 else response.status)
                except (OSError, http.client.HTTPException) as exc:
                    statuses.append(repr(exc))

            waiter = threading.Thread(target=engine)
            waiter.start()
            time.sleep(0.2)  # the engine's wait is registered (on arrival: edge/calls.py) before anyone decides
            committed: list[float] = []
            approval = ApprovalRequest.objects.select_related("config").get(public_id=public_id)
            with transaction.atomic():
                transaction.on_commit(lambda committed=committed: committed.append(time.perf_counter()))
                approval_decide(approval=approval, user=self.world.reviewer, decision="approve")
            waiter.join(timeout=25)
            if answered and statuses[0] == "approved":
                samples.append((answered[0] - committed[0]) * 1000)
            else:
                failures += 1
        connection.close()
        return {
            "p50_ms": percentile(samples, 50),
            "p95_ms": percentile(samples, 95),
            "max_ms": max(samples) if samples else None,
            "samples": len(samples),
            "failed": failures,
        }

    def settle(self) -> float:
        """Until the server has taken in every wait sent: short long-polls pass through the same queue
        (each worker's executor) behind them, so once a few answer promptly the ramp has been absorbed."""
        t0 = time.monotonic()
        headers = {"Authorization": f"Bearer {self.engine_tokens[1]}"}
        prompt = 0
        while prompt < 4 and time.monotonic() - t0 < 60:
            conn = http.client.HTTPConnection("127.0.0.1", PORT, timeout=60)
            started = time.monotonic()
            try:
                conn.request("GET", f"/api/v1/approvals/{self.waited[0]}?wait=0.05", headers=headers)
                conn.getresponse().read()
            except (OSError, http.client.HTTPException):
                time.sleep(0.5)
            finally:
                conn.close()
            prompt = prompt + 1 if time.monotonic() - started < 0.5 else 0
        return time.monotonic() - t0

    def connections_held(self) -> dict:
        """The server's connections: for requests (pool or per thread) and for its waiters (edge/hub.py)."""
        import psycopg

        with psycopg.connect(self.url.replace("postgres://", "postgresql://"), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT application_name, count(*) FROM pg_stat_activity WHERE datname = current_database()"
                " AND pid <> pg_backend_pid() AND application_name IN (%s, 'hitl-waiting') GROUP BY 1",
                [APP_NAME],
            ).fetchall()
        by_name = dict(rows)
        return {"requests": by_name.get(APP_NAME, 0), "waiters": by_name.get("hitl-waiting", 0)}

    def level(self, server: Server, waiters: int, hold_s: float, *, re_polling: bool = False) -> dict:
        cpu_before = server.cpu_s()
        load = subprocess.Popen(
            [sys.executable, "-m", "bench.waitload", "--port", str(PORT), "--waiters", str(waiters)]
            + ["--tokens-file", str(RESULTS / "waiting-tokens.txt"), "--ids-file", str(RESULTS / "waiting-ids.txt")]
            + ["--duration", str(hold_s), "--ramp-timeout", "90"]
            + (["--spread"] if re_polling else []),
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            ready_line = load.stdout.readline().strip()
            figures: dict = {"ready": ready_line, "settle_s": self.settle()}
            # Server CPU per wait taken in (the ramp: each wait's first read), in ms.
            figures["ramp_cpu_ms_per_wait"] = (server.cpu_s() - cpu_before) * 1000 / max(waiters, 1)
            figures.update(connections=self.connections_held(), rss_mib=server.rss_mib())
            figures["reviewer_api"] = self.reviewer_latencies(
                "/api/v1/approvals?status=pending", {"Authorization": f"Bearer {self.reviewer_token}"}, 40
            )
            figures["approvals_tab"] = self.reviewer_latencies(
                "/hitl/approvals/", {"Cookie": self.browser_cookies()}, 40
            )
            figures["decision"] = self.decision_latencies(20)
            figures["connections_after"] = self.connections_held()
            figures["rss_mib"] = max(figures["rss_mib"], server.rss_mib())
            out, _ = load.communicate(timeout=hold_s + 120)
            figures["load"] = json.loads(out.strip().splitlines()[-1])
        finally:
            if load.poll() is None:
                load.kill()
                load.wait()
        return figures


def _conns(*samples: dict) -> str:
    """The most held at any sample: requests + waiters."""
    requests, waiters = max(s["requests"] for s in samples), max(s["waiters"] for s in samples)
    return f"{requests + waiters} ({requests} + {waiters})"


def summarise(results: dict) -> str:
    lines = [
        f"| server | waiters | reviewer API p50/p95 ({REVIEWERS} at once; p95 ≤ {REVIEWER_TARGET_MS} ms) |"
        f" Approvals tab p50/p95 (same) | decision → engine p50/p95 (p95 ≤ {DECISION_TARGET_MS} ms) |"
        " DB conns (requests + waiters) |"
        " RSS | ramp: s, server CPU per wait | long-poll answers (errors) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]

    def pair(figure: dict, a: str, b: str) -> str:
        if figure.get(a) is None:
            return f"— ({figure.get('failed')} failed)"
        failed = f" ({figure['failed']} failed)" if figure.get("failed") else ""
        return f"{figure[a]:.0f} / {figure[b]:.0f} ms{failed}"

    for name, levels in results["servers"].items():
        for waiters, f in levels.items():
            if "error" in f:
                lines.append(f"| {name} | {waiters} | {f['error']} | | | | | | |")
                continue
            answers = ", ".join(f"{k}: {v:,}" for k, v in f["load"]["answers"].items()) or "none"
            errors = sum(f["load"]["errors"].values())
            lines.append(
                f"| {name} | {waiters} | {pair(f['reviewer_api'], 'p50_ms', 'p95_ms')} |"
                f" {pair(f['approvals_tab'], 'p50_ms', 'p95_ms')} | {pair(f['decision'], 'p50_ms', 'p95_ms')} |"
                f" {_conns(f['connections'], f['connections_after'])} | {f['rss_mib']:,.0f} MiB |"
                f" {f['load']['ramp_s']:.1f} s, {f.get('ramp_cpu_ms_per_wait', 0):.2f} ms |"
                f" {answers} ({errors:,}) |"
            )
    return "\n".join(lines)


def run_waiting(url: str, *, servers: list[str], levels: list[int], hold_s: float) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # the servers inherit it: a socket per waiter
    bench = Bench(url)
    results: dict = {"when": datetime.now(UTC).isoformat(timespec="seconds"), "cores": os.cpu_count(), "servers": {}}
    for name in servers:
        results["servers"][name] = {}
        for waiters, re_polling in itertools.product(levels, (False, True)):
            key = f"{waiters:,}" + (RE_POLLING if re_polling else "")
            log(f"{name}: {key} waiting engines")
            server = Server(name, url)
            try:
                results["servers"][name][key] = bench.level(server, waiters, hold_s, re_polling=re_polling)
            except Exception as exc:  # a server that falls over is a figure too
                results["servers"][name][key] = {"error": repr(exc)[:200]}
            finally:
                server.stop()
            log(json.dumps(results["servers"][name][key])[:600])
            (RESULTS / "waiting.json").write_text(json.dumps(results, indent=2))  # kept level by level
    table = summarise(results)
    (RESULTS / "waiting.md").write_text(table + "\n")
    print()
    print(table)


__all__ = ["LEVELS", "SERVERS", "run_waiting"]
