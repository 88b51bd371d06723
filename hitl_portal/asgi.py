"""The ASGI application the production server runs (`make serve`, README: Deploying)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hitl_portal.settings")
# Under ASGI each request's sync code runs on a thread of the moment: settings pool the connections.
os.environ["HITL_ASGI"] = "1"
django.setup(set_prefix=False)

from .handlers import PortalASGI  # noqa: E402  (after setup: the handlers load the middleware)

application = PortalASGI()
