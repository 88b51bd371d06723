"""Settings for HITL Portal, read from the environment with safe development defaults."""

import ipaddress
import os
import re
from datetime import timedelta
from pathlib import Path

from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from hitl_portal import databases
from hitl_portal.databases import behind_transaction_pooler, pooled_under_asgi  # noqa: F401 (bench/settings.py)

BASE_DIR = Path(__file__).resolve().parent.parent


def envbool(name: str, default: str) -> bool:
    value = os.environ.get(name, default).lower()
    if value not in ("true", "false", "1", "0", "yes", "no"):
        raise ImproperlyConfigured(f"{name} must be true or false, not {value!r}")
    return value in ("true", "1", "yes")


def envint(name: str, default: str) -> int:
    value = os.environ.get(name, default)
    try:
        return int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be an integer, not {value!r}") from None


def envlist(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = envbool("DEBUG", "true")
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is false")
    SECRET_KEY = "dev-only-insecure-key-never-use-in-production"
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", "")
SITE_URL = os.environ.get("SITE_URL", "http://127.0.0.1:8000")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.forms",  # the widget templates, for FORM_RENDERER
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc served from the package, never a CDN
    "axes",
    "django_htmx",
    "django_q",
    "workspaces",
    "people",
    "rules",
    "contacts",
    "approvals",
    "collaboration",
    "integrations",
    "audit",
    "insights",
    "passkeys",
    "push",
]

MIDDLEWARE = [
    "common.middleware.ApiEnvelopeMiddleware",  # first: a bad Host is refused before anyone asks for it
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "common.middleware.AsyncStreamingMiddleware",  # before WhiteNoise: its files are streamed as ASGI wants
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "common.middleware.ApiBodyLimitMiddleware",
    "common.middleware.NulGuardMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "common.errors.DomainErrorPages",
    # Last, as django-axes asks: it turns a lockout raised during login into its page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "hitl_portal.urls"
FORM_RENDERER = "common.forms.FormRenderer"
WSGI_APPLICATION = "hitl_portal.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "workspaces.context_processors.workspace",
                "approvals.context_processors.halting",  # the banner while the workspace is frozen
            ],
        },
    },
]

DATABASES = databases.databases()  # hitl_portal/databases.py: DATABASE_URL, the pool, a transaction pooler
HITL_LISTEN_DATABASE = databases.listen_database()  # edge/hub.py
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# For the admin's forms and `hitl member add --password` alike. Not UserAttributeSimilarityValidator:
# it refuses the demo's printed logins ("acme-admin-demo" for admin@acme.test) for little gain.
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# django-axes in front of the ordinary backend: /login/ and /admin/login/ both authenticate
# through it, so both are throttled. Locked per (username, IP): a wrong-password flood from one
# address stops after AXES_FAILURE_LIMIT tries without letting anyone lock a colleague out from
# elsewhere. A successful login resets the count; `manage.py axes_reset` unlocks by hand.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = envint("LOGIN_FAILURE_LIMIT", "5")
AXES_COOLOFF_TIME = timedelta(minutes=envint("LOGIN_LOCKOUT_MINUTES", "15"))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked.html"
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

# docs/api.md: a request body over 256 KiB answers 413.
API_MAX_BODY_BYTES = 256 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES

# Production (README, "Production settings"; docs/production.env passes `check --deploy`):
# behind a TLS-terminating proxy set SECURE_PROXY_SSL, SECURE_SSL_REDIRECT, SECURE_COOKIES and HSTS.
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", "false")
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
# Django's database sessions: who a browser is, read from the database on every request.
SESSION_ENGINE = "django.contrib.sessions.backends.db"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
if envbool("SECURE_PROXY_SSL", "false"):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", "false")
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]  # load balancers probe over plain HTTP
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", "0")
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", "false")
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", "false")

# Content-Security-Policy (django-csp): everything from our own origin, no inline script or
# handler anywhere (page behaviour lives in static/js/portal.js), nothing framed, forms post home.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "img-src": [SELF, "data:"],  # Swagger UI's and the admin's small inline icons
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
        # The installable portal: its service worker (/hitl/sw.js) and manifest, from our origin only.
        "worker-src": [SELF],
        "manifest-src": [SELF],
    }
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "workspaces.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["workspaces.permissions.IsWorkspaceActor"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["common.parsers.JSONParser"],  # bounded nesting: never a 500
    "DEFAULT_PAGINATION_CLASS": "common.pagination.CursorPagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "common.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "UNAUTHENTICATED_USER": None,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "HITL Portal API",
    "DESCRIPTION": "Human-in-the-loop governance for AI agents: configs, rules, contacts, approvals.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "common.schema.tidy_operations",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # Several fields share a name ("kind", "status") across components: name each choice set.
    "ENUM_NAME_OVERRIDES": {
        "RuleKindEnum": "rules.vocabulary.RuleKind",
        "ApprovalKindEnum": "approvals.models.ApprovalKind",
        "ApprovalStatusEnum": "approvals.models.Status",
        "ExecutionStatusEnum": "approvals.models.ExecutionStatus",
        "PassInformationLevelEnum": "rules.vocabulary.PassInformationLevel",
        "RuleModeEnum": "rules.vocabulary.RuleMode",
        "TokenCapModeEnum": "rules.vocabulary.TokenCapMode",
        "GrantScopeEnum": "approvals.models.GrantScope",
        "TokenCapScopeEnum": "approvals.models.Scope",
        "RuleWindowScopeEnum": [("rule", "rule")],
        "ErrorCodeEnum": "common.errors.ERROR_CODES",
    },
}

# Approval requests live 24 hours unless the engine asks for less.
APPROVAL_TTL_SECONDS = 24 * 60 * 60
# GET /api/v1/approvals/{apr}?wait=S long-polls at most this long.
APPROVAL_MAX_WAIT_SECONDS = 30
# docs/api.md, Operations: each key may hold this many waits at once (per server process); one more → 429.
HITL_MAX_WAITS_PER_KEY = envint("HITL_MAX_WAITS_PER_KEY", "1000")
# A node shutting down (a rolling restart) gives back its held waits this many a second per server
# process (edge/hub.py, docs/deploy.md): what the other node takes in without queueing them.
HITL_RELEASE_PER_SECOND = envint("HITL_RELEASE_PER_SECOND", "500")
# A rule condition slower than this to evaluate counts as an error: its request fails closed (pends).
HITL_CONDITION_TIME_LIMIT_MS = envint("HITL_CONDITION_TIME_LIMIT_MS", "50")
# Set when migrating as the tables' owner: this role gets read and write of rows only (audit/db_roles.py).
HITL_DB_RUNTIME_ROLE = os.environ.get("HITL_DB_RUNTIME_ROLE", "")
# The dry run of a draft (rules/simulate.py) gives up after this long rather than load the database.
HITL_SIMULATE_TIMEOUT_SECONDS = envint("HITL_SIMULATE_TIMEOUT_SECONDS", "20")
# The Approvals tab refreshes its queue this often (tests shorten it).
APPROVALS_REFRESH_SECONDS = envint("APPROVALS_REFRESH_SECONDS", "10")

# --- Receipts (approvals/receipts/keys.py, docs/receipts.md) ---------------------------------
# The Ed25519 private key (PEM) every decided request's receipt is signed with; required when DEBUG is
# off (checked at startup). With DEBUG on and none set, a development key is derived from SECRET_KEY so
# every process of one portal signs alike. `hitl receipt-key new` makes one.
HITL_RECEIPT_KEY = os.environ.get("HITL_RECEIPT_KEY", "")
# Public keys (PEM, one or more blocks) of keys signed with before: still published by /.well-known/jwks.json,
# so receipts signed before a rotation keep verifying. `hitl receipt-key rotate` prints the new pair of values.
HITL_RECEIPT_PREVIOUS_KEYS = os.environ.get("HITL_RECEIPT_PREVIOUS_KEYS", "")

# --- Notifications (contacts.outbox, contacts.transports) -----------------------------------
# The portal's public address, for links in messages and the webhook `source`. Required when
# DEBUG is off and any contact exists (checked at startup: contacts.checks).
HITL_BASE_URL = os.environ.get("HITL_BASE_URL", "").rstrip("/") or (SITE_URL.rstrip("/") if DEBUG else "")
# How long a claimed delivery is held by its worker before it is due again (a killed worker's rows).
HITL_DELIVERY_LEASE_SECONDS = envint("HITL_DELIVERY_LEASE_SECONDS", "60")
# Retries on network errors, timeouts, 429 and 5xx: base * 2^(attempt-1), ±20% jitter, at most
# this many attempts (60 s base: the first five attempts span 12–18 minutes).
HITL_DELIVERY_MAX_ATTEMPTS = envint("HITL_DELIVERY_MAX_ATTEMPTS", "8")
HITL_DELIVERY_RETRY_BASE_SECONDS = envint("HITL_DELIVERY_RETRY_BASE_SECONDS", "60")
HITL_WEBHOOK_TIMEOUT_SECONDS = envint("HITL_WEBHOOK_TIMEOUT_SECONDS", "10")
# Web Push (push/): the VAPID key pair is read from HITL_VAPID_PRIVATE_KEY / HITL_VAPID_SUBJECT at
# send time (push/vapid.py). Push services are https; a plain-http endpoint (a push service on
# loopback, for tests) is accepted only when this is set.
HITL_PUSH_ALLOW_HTTP = envbool("HITL_PUSH_ALLOW_HTTP", "false")
# Webhook URLs and push endpoints reach public addresses only (contacts/outbound.py): internal
# receivers the host trusts are named here, comma-separated CIDRs and host names (10.20.0.0/16, hooks.internal).
HITL_OUTBOUND_ALLOW = envlist("HITL_OUTBOUND_ALLOW", "")
for _allowed in HITL_OUTBOUND_ALLOW:
    try:
        ipaddress.ip_network(_allowed, strict=False)
    except ValueError:
        if not re.fullmatch(r"[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?\.?", _allowed):
            raise ImproperlyConfigured(
                f"HITL_OUTBOUND_ALLOW: {_allowed!r} is neither a network (10.0.0.0/8, 192.0.2.7) nor a host name"
            ) from None


def _email_settings() -> dict:
    """EMAIL_URL (smtp://user:password@host:port, smtp+tls:// or smtp+ssl://) or the usual EMAIL_*."""
    from urllib.parse import unquote, urlsplit

    url = os.environ.get("EMAIL_URL", "")
    if not url:
        return {
            "EMAIL_HOST": os.environ.get("EMAIL_HOST", "localhost"),
            "EMAIL_PORT": envint("EMAIL_PORT", "25"),
            "EMAIL_HOST_USER": os.environ.get("EMAIL_HOST_USER", ""),
            "EMAIL_HOST_PASSWORD": os.environ.get("EMAIL_HOST_PASSWORD", ""),
            "EMAIL_USE_TLS": envbool("EMAIL_USE_TLS", "false"),
            "EMAIL_USE_SSL": envbool("EMAIL_USE_SSL", "false"),
        }
    parts = urlsplit(url)
    if parts.scheme not in ("smtp", "smtp+tls", "smtp+ssl") or not parts.hostname:
        raise ImproperlyConfigured("EMAIL_URL must look like smtp://user:password@host:port (or smtp+tls, smtp+ssl)")
    return {
        "EMAIL_HOST": parts.hostname,
        "EMAIL_PORT": parts.port or (465 if parts.scheme == "smtp+ssl" else 25),
        "EMAIL_HOST_USER": unquote(parts.username or ""),
        "EMAIL_HOST_PASSWORD": unquote(parts.password or ""),
        "EMAIL_USE_TLS": parts.scheme == "smtp+tls",
        "EMAIL_USE_SSL": parts.scheme == "smtp+ssl",
    }


globals().update(_email_settings())
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.smtp.EmailBackend")
EMAIL_TIMEOUT = envint("EMAIL_TIMEOUT", "10")
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "HITL Portal <hitl@localhost>")

# Slack app (README, "Slack"): the bot token and signing secret come from the environment only,
# never the database. The API base URL is configurable so tests can point at a fake on loopback.
HITL_SLACK_BOT_TOKEN = os.environ.get("HITL_SLACK_BOT_TOKEN", "")
HITL_SLACK_SIGNING_SECRET = os.environ.get("HITL_SLACK_SIGNING_SECRET", "")
HITL_SLACK_API_URL = os.environ.get("HITL_SLACK_API_URL", "https://slack.com/api/")

# Telegram bot (docs/telegram.md): the bot token and the webhook's secret come from the environment
# only. The Bot API's base URL is configurable so tests can point at a fake on loopback.
HITL_TELEGRAM_BOT_TOKEN = os.environ.get("HITL_TELEGRAM_BOT_TOKEN", "")
HITL_TELEGRAM_WEBHOOK_SECRET = os.environ.get("HITL_TELEGRAM_WEBHOOK_SECRET", "")
# The bot's @username (without @), for the account page's t.me link; optional.
HITL_TELEGRAM_BOT_USERNAME = os.environ.get("HITL_TELEGRAM_BOT_USERNAME", "").lstrip("@")
HITL_TELEGRAM_API_URL = os.environ.get("HITL_TELEGRAM_API_URL", "https://api.telegram.org").rstrip("/")

# A request nobody could be told of, and nobody opened, ends this long after it was registered when
# its rule says on_unreachable: "reject" (docs/undeliverable.md).
HITL_UNDELIVERABLE_SECONDS = envint("HITL_UNDELIVERABLE_SECONDS", "600")

Q_CLUSTER = {
    "name": "hitl",
    "orm": "default",
    "workers": envint("Q_WORKERS", "2"),
    "timeout": 60,
    "retry": 120,
    "catch_up": False,
    "ack_failures": True,
    "max_attempts": 3,
    # The ORM broker's poll: a notification waits at most this long for a worker (API.md: within 5 s).
    "poll": float(os.environ.get("Q_POLL", "0.25")),
    "label": "Background tasks",
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # django-axes logs every login at INFO; lockouts (WARNING) are what an operator needs.
    "loggers": {"axes": {"level": "WARNING"}},
}
