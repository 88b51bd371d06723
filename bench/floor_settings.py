"""The Django floor's settings: Django + DRF + PostgreSQL and one middleware, nothing of the portal.

Served by gunicorn gthread 3 × 4 (bench/floors.py), it answers bench/floor.py's two views: one
INSERT, one indexed SELECT, no authentication — what any Django API must pay per call.
"""

import os

import dj_database_url

DEBUG = False
SECRET_KEY = "bench-floor-not-a-secret"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth", "rest_framework"]
MIDDLEWARE = ["django.middleware.security.SecurityMiddleware"]
ROOT_URLCONF = "bench.floor_urls"
USE_TZ = True
DATABASES = {
    "default": dj_database_url.parse(os.environ["BENCH_DATABASE_URL"], conn_max_age=600, conn_health_checks=True)
}
REST_FRAMEWORK = {
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "UNAUTHENTICATED_USER": None,
}
