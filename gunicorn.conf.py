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

# gunicorn's runtime control socket defaults to one path per user (~/.gunicorn/gunicorn.ctl): every
# gunicorn on a machine — two nodes, the tests' servers side by side — would take it from the last.
# The portal is managed by signals (systemd, make cluster), so it is off.
control_socket_disable = True

# The app is imported once, by the master, before it binds the port (hitl_portal/asgi.py), and each
# worker forked from it is ready in a fraction of a second: a restarted node refuses connections
# while it loads — nginx sends them to the other node at once — instead of queueing them for the
# seconds a worker would take to import Django (docs/deploy.md, rolling restarts).
preload_app = True
