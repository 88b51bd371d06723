"""A WSGI application, for tools that want one; the portal is served as ASGI (asgi.py, edge/)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hitl_portal.settings")

application = get_wsgi_application()

# Fail at startup, with a message, when links could not be built (contacts exist, no HITL_BASE_URL).
from contacts.checks import require_base_url  # noqa: E402

require_base_url()

# …and when receipts could not be signed (DEBUG off, HITL_RECEIPT_KEY missing or malformed).
from approvals.receipts.keys import require_receipt_key  # noqa: E402

require_receipt_key()

# A WSGI server may import this once and fork its workers from it (gunicorn's preload_app, gunicorn.conf.py).
from hitl_portal.databases import close_before_fork  # noqa: E402

close_before_fork()
