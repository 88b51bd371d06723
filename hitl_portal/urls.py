from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularSwaggerSplitView

from approvals.receipts.api import jwks_view
from insights import operations
from integrations import telegram_account_views
from push import views as push_views
from workspaces import account

from . import views
from .schema_view import SchemaView

urlpatterns = [
    # Engines' calls first: Django tries these in order, and registrations and polls are most of the traffic.
    path("api/v1/", include("approvals.api_urls")),
    path("", views.home, name="home"),
    path("healthz", operations.healthz, name="healthz"),
    path("metrics", operations.metrics, name="metrics"),
    path(".well-known/jwks.json", jwks_view, name="jwks"),
    path("login/", auth_views.LoginView.as_view(template_name="registration/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("workspaces/", include("workspaces.urls")),
    path("hitl/account/telegram/code", telegram_account_views.link_code, name="telegram-account-code"),
    path("hitl/account/telegram/unlink", telegram_account_views.unlink, name="telegram-account-unlink"),
    path("hitl/", include("rules.urls")),
    path("hitl/", include("contacts.urls")),
    path("hitl/", include("collaboration.urls")),
    path("hitl/", include("approvals.urls")),
    path("hitl/", include("insights.urls")),
    path("hitl/", include("passkeys.urls")),
    path("hitl/", include("push.urls")),
    path("hitl/", include("people.urls")),
    path("hitl/account/", account.account, name="account"),
    path("manifest.webmanifest", push_views.manifest, name="push-manifest"),
    path("integrations/", include("integrations.urls")),
    path("admin/", admin.site.urls),
    path("favicon.ico", views.favicon),
    path("api/schema/", SchemaView.as_view(), name="schema"),
    # The split view serves its start-up script as a file: no inline script, so the CSP holds here too.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema"), name="api-docs"),
    path("api/v1/", include("collaboration.api_urls")),
    path("api/v1/", include("rules.api_urls")),
    path("api/v1/", include("people.api_urls")),
    path("api/v1/", include("contacts.api_urls")),
    path("api/v1/", include("insights.api_urls")),
    path("api/v1/", include("push.api_urls")),
    # Last: an /api/ path nothing above takes answers the JSON 404 whatever DEBUG is (with DEBUG on,
    # Django would answer its HTML debug page instead of calling handler404).
    re_path(r"^api/", views.not_found),
]

handler404 = "hitl_portal.views.not_found"
handler500 = "hitl_portal.views.server_error"
