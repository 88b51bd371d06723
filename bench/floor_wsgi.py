"""WSGI entry of the Django floor (bench/floor_settings.py)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ["DJANGO_SETTINGS_MODULE"] = "bench.floor_settings"
application = get_wsgi_application()
