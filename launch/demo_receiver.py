"""`make run`'s webhook receiver: a loopback endpoint that verifies each delivery and logs it.

    python -m launch.demo_receiver [--port N]     (0, the default: a free port)

It checks the Standard Webhooks signature with the secret in HITL_DEMO_WEBHOOK_SECRET (the
same variable the demo's webhook contact names) and prints one line per event. It says it is
listening only once it is: `make run` (launch/run.py) starts it first and stops if it cannot.
"""

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def listen(port: int, secret: str) -> ThreadingHTTPServer:
    """Bind 127.0.0.1:port (0: any free one) and serve on a daemon thread; OSError if it cannot bind."""
    verifier = Webhook(secret)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
            try:
                event, verdict, status = verifier.verify(body, dict(self.headers)), "signature ok", 200
            except (WebhookVerificationError, ValueError):
                event, verdict, status = _loose_json(body), "BAD SIGNATURE", 401
            print(
                f"[webhook {time.strftime('%H:%M:%S')}] {event.get('type')} {event.get('subject', '')} "
                f"id={self.headers.get('webhook-id')} ({verdict})",
                flush=True,
            )
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)  # binds here, or raises
    threading.Thread(target=server.serve_forever, name="demo-webhook-receiver", daemon=True).start()
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/hook"


def _loose_json(body: bytes) -> dict:
    try:
        value = json.loads(body or b"{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=int(os.environ.get("DEMO_WEBHOOK_PORT", "0")))
    args = parser.parse_args()
    try:
        server = listen(args.port, os.environ["HITL_DEMO_WEBHOOK_SECRET"])
    except OSError as error:
        print(f"[webhook] cannot listen on 127.0.0.1:{args.port}: {error.strerror}", file=sys.stderr)
        return 1
    print(f"[webhook] demo receiver listening on {url_of(server)}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
