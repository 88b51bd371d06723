import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hitl_portal.settings")
django.setup(set_prefix=False)

from .handlers import PortalWSGI  # noqa: E402  (after setup: the handlers load the middleware)

application = PortalWSGI()
