"""The ASGI application the production server runs (`make serve`, README: Deploying): edge/app.py."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hitl_portal.settings")
# Under ASGI each request's sync code runs on a thread of the moment: settings pool the connections.
os.environ["HITL_ASGI"] = "1"
django.setup(set_prefix=False)

from edge.app import Portal  # noqa: E402  (after setup: it loads the middleware and the views)

application = Portal()

# Fail at startup, with a message, when links could not be built (contacts exist, no HITL_BASE_URL).
from contacts.checks import require_base_url  # noqa: E402

require_base_url()

# …and when receipts could not be signed (DEBUG off, HITL_RECEIPT_KEY missing or malformed).
from approvals.receipts.keys import require_receipt_key  # noqa: E402

require_receipt_key()

# gunicorn imports this module in its master and forks the workers from it (preload_app, gunicorn.conf.py).
from hitl_portal.databases import close_before_fork  # noqa: E402

close_before_fork()
