"""A reviewer at the queue, deciding through the reviewer API while an engine waits."""

import threading
import time

from ..helpers import make_config, make_rule, publish


class Reviewer(threading.Thread):
    """Decides the next `count` pending requests through `POST …/decision`, oldest first, as a person would.

    `body` adds to the decision: `{"arguments": …}` approves with edits, `{"answers": …}` answers a question.
    """

    def __init__(
        self, api, decision: str, reason: str = "", *, count: int = 1, timeout: float = 30, body: dict | None = None
    ):
        super().__init__(daemon=True)
        self.api, self.decision, self.reason, self.count, self.timeout = api, decision, reason, count, timeout
        self.body = body or {}
        self.decided: list[dict] = []
        self.start()

    def run(self) -> None:
        deadline = time.monotonic() + self.timeout
        while len(self.decided) < self.count and time.monotonic() < deadline:
            for approval in self.api.get("/api/v1/approvals?status=pending").json()["results"]:
                decision = {"decision": self.decision, **({"reason": self.reason} if self.reason else {}), **self.body}
                answer = self.api.post(f"/api/v1/approvals/{approval['id']}/decision", decision)
                assert answer.status_code == 200, answer.text
                self.decided.append(answer.json())
                if len(self.decided) == self.count:
                    return
            time.sleep(0.05)

    def finish(self) -> list[dict]:
        self.join(self.timeout + 5)
        return self.decided


def wait_until_pending(api, count: int = 1, timeout: float = 20) -> list[dict]:
    """The pending requests once `count` of them are in the queue (the engine has asked)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = api.get("/api/v1/approvals?status=pending").json()["results"]
        if len(pending) >= count:
            return pending
        time.sleep(0.05)
    raise AssertionError(f"the engine never asked: fewer than {count} pending requests after {timeout} s")


def make_billing_config(workspace, user=None):
    """Published v1 at level full: refunds on mcp_billing gated, a reviewer may approve them with edits."""
    config = make_config(workspace, "Billing agent", pass_information_level="full")
    make_rule(config, kind="mcp_server", match="mcp_billing", allow_edit=True, message="Refunds move real money.")
    publish(config, user)
    return config
