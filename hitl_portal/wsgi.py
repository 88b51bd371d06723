import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "hitl_portal.settings")
django.setup(set_prefix=False)

from .handlers import PortalWSGI  # noqa: E402  (after setup: the handlers load the middleware)

application = PortalWSGI()

# Fail at startup, with a message, when links could not be built (contacts exist, no HITL_BASE_URL).
from contacts.checks import require_base_url  # noqa: E402

require_base_url()
