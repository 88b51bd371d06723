"""The TypeScript client's cost: what its gate-and-wait adds over a raw fetch loop making the same HTTP exchanges.

`make bench` runs clients/typescript/bench/gate.js (its docstring says how it measures) against its own
server, in a workspace of its own: an admin to make the config, a reviewer to approve, an engine key.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

PACKAGE = Path(__file__).resolve().parent.parent / "clients" / "typescript"
TARGET_ADDED_MS = 2.0


def measure_typescript(*, base_url: str, calls: int) -> dict:
    from workspaces.services import member_add, token_create, workspace_create

    workspace = workspace_create(slug=f"typescript-{int(time.time())}", plan="pro", name="TypeScript bench")
    admin = member_add(workspace=workspace, email="admin@ts.test", role="admin", password="bench-admin").user
    reviewer = member_add(workspace=workspace, email="reviewer@ts.test", role="reviewer", password="bench-rev").user
    env = {
        **os.environ,
        "HITL_URL": base_url,
        "HITL_ADMIN_TOKEN": token_create(workspace=workspace, user=admin)[1],
        "HITL_REVIEWER_TOKEN": token_create(workspace=workspace, user=reviewer)[1],
        "HITL_ENGINE_KEY": token_create(workspace=workspace, engine_name="typescript-bench")[1],
    }
    subprocess.run(["npm", "run", "build"], cwd=PACKAGE, check=True, capture_output=True)
    run = subprocess.run(
        ["node", "bench/gate.js", str(calls)], cwd=PACKAGE, env=env, check=True, capture_output=True, text=True
    )
    return json.loads(run.stdout.strip().splitlines()[-1])


def run(bench: Any) -> list[dict]:
    """The section `make bench` runs while its server is up."""
    from bench.harness import log
    from bench.report import row
    from bench.server import PORT

    log("TypeScript client: gate-and-wait over a raw fetch loop (bench/typescript.py)")
    results = measure_typescript(base_url=f"http://127.0.0.1:{PORT}", calls=30 if bench.args.quick else 100)
    bench.results["typescript"] = results
    added, floor = results["added_p50_ms"], results["raw_fetch_own_p50_ms"]
    return [
        row(
            "TypeScript client: gate-and-wait's own time over a raw fetch loop's, per gated call (p50)",
            added,
            floor,
            " ms",
            added / floor if floor else None,
            f"≤ {TARGET_ADDED_MS:g} ms",
            added <= TARGET_ADDED_MS,
        )
    ]
