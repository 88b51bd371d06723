"""gunicorn's settings for the portal as served: read from the working directory by every gunicorn
that starts here (`make serve`, `make run`, the README's deploy section, the tests' server).

X-Forwarded-For and X-Forwarded-Proto are believed only from the proxies named in
HITL_TRUSTED_PROXIES (addresses or networks, comma-separated; none by default). The client
address is what django-axes locks a login out by: trusting the header from anyone — gunicorn's
default trusts loopback — let one client send a new address with each wrong password and never
be locked out.
"""

import os

forwarded_allow_ips = os.environ.get("HITL_TRUSTED_PROXIES", "")
