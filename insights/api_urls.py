from django.urls import path

from . import audit_api

urlpatterns = [path("audit", audit_api.AuditExportView.as_view(), name="api-audit")]
