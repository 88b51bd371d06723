"""The portal's settings for `make bench`: its own throwaway database, production-like."""

import os
import warnings

import dj_database_url

# The benchmark runs on its own throwaway database, never on DATABASE_URL's.
os.environ["DATABASE_URL"] = os.environ["BENCH_DATABASE_URL"]
# Its receivers (webhook, push service) listen on loopback: allowed as a host allows an internal receiver.
os.environ.setdefault("HITL_OUTBOUND_ALLOW", "127.0.0.1/32")

from hitl_portal.settings import *  # noqa: E402, F403

DEBUG = False  # DEBUG keeps every query in memory and renders slower error pages: not what we measure
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
DATABASES = {
    "default": dj_database_url.parse(
        os.environ["BENCH_DATABASE_URL"],
        # Persistent connections, as deployed: a request never pays for a new connection.
        conn_max_age=600,
        conn_health_checks=True,
    )
}
behind_transaction_pooler(pooled_under_asgi(DATABASES["default"]))  # noqa: F405
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # No collectstatic in a benchmark: plain static storage renders {% static %} without a manifest.
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": "WARNING"},
}


# Whitenoise warns about the missing collectstatic directory on every worker start; nothing is served from it here.
warnings.filterwarnings("ignore", message="No directory at")
