"""A webhook endpoint on loopback that checks every delivery the way a customer's would.

The signature is verified with the Standard Webhooks reference algorithm written out here —
HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}", keyed by the base64-decoded part
of the whsec_ secret — not with the library the portal signs with, so a misuse of it fails.
"""

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = "whsec_" + base64.b64encode(b"a-test-signing-secret-of-32-bytes").decode()


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    offered = [part.split(",", 1)[1] for part in headers["webhook-signature"].split() if part.startswith("v1,")]
    return any(hmac.compare_digest(expected, sig) for sig in offered)


class Receiver:
    """Records each POST as (headers, parsed body); `answer` picks the status for each one."""

    def __init__(self, secret: str = SECRET) -> None:
        self.secret = secret
        self.received: list[tuple[dict[str, str], dict]] = []
        self.bad_signatures = 0
        self.answer: Callable[[dict], int] = lambda event: 200
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                ok = {"webhook-id", "webhook-timestamp", "webhook-signature"} <= set(headers) and verify(
                    receiver.secret, headers, body
                )
                event = json.loads(body) if ok else {}
                with receiver.lock:
                    if ok:
                        receiver.received.append((headers, event))
                    else:
                        receiver.bad_signatures += 1
                status = receiver.answer(event) if ok else 401
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "Receiver":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def events(self, type_suffix: str | None = None) -> list[dict]:
        with self.lock:
            events = [event for _, event in self.received]
        return [e for e in events if type_suffix is None or e["type"] == f"dev.hitl.approval.{type_suffix}"]

    def wait_for(self, count: int, type_suffix: str | None = None, timeout: float = 15) -> list[dict]:
        deadline = time.monotonic() + timeout
        while len(self.events(type_suffix)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"received {len(self.events(type_suffix))} of {count} {type_suffix or ''} events")
            time.sleep(0.02)
        return self.events(type_suffix)
