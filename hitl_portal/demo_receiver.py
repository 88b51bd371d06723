"""`make run`'s webhook receiver: a loopback endpoint that verifies each delivery and logs it.

    python -m hitl_portal.demo_receiver --port 8009

It checks the Standard Webhooks signature with the secret in HITL_DEMO_WEBHOOK_SECRET (the
same variable the demo's webhook contact names) and prints one line per event.
"""

import argparse
import json
import os
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8009)
    args = parser.parse_args()
    verifier = Webhook(os.environ["HITL_DEMO_WEBHOOK_SECRET"])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            try:
                event = verifier.verify(body, dict(self.headers))
                verdict = "signature ok"
                status = 200
            except (WebhookVerificationError, ValueError):
                event, verdict, status = json.loads(body or b"{}"), "BAD SIGNATURE", 401
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

    # Started in the background by make run, where SIGINT is ignored unless asked for: Ctrl-C ends it too.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: sys.exit(0))
    print(f"[webhook] demo receiver listening on http://127.0.0.1:{args.port}/hook", flush=True)
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
